package protocol

import (
	"fmt"
)

// ExampleKeyLayout_Mutex shows a mutex's keys and channel under the default
// prefix, and the last-token key a Redlock Locker adds.
func ExampleKeyLayout_Mutex() {
	lay := &KeyLayout{Prefix: "locktag:"}
	n, token := lay.Mutex("order:42", nil)
	fmt.Println(n.Keys.Names(), n.Channel, len(token))
	lay.LastKey = true
	n, _ = lay.Mutex("order:42", nil)
	fmt.Println(n.Keys.Names())
	// Output:
	// [locktag:{order:42} locktag:{order:42}:q locktag:{order:42}:w] locktag:{order:42}:c 22
	// [locktag:{order:42} locktag:{order:42}:q locktag:{order:42}:w locktag:{order:42}:f]
}

// ExampleLabel joins the Locker's label and the call's, and cuts what is
// stored to MaxLabel bytes of valid UTF-8.
func ExampleLabel() {
	fmt.Println(Label("shop@host-3", "POST /orders/:id/pay"))
	fmt.Println(Reason("  "))
	fmt.Printf("%q\n", Cut("naïve", 3))
	// Output:
	// shop@host-3; POST /orders/:id/pay
	// no reason given
	// "na"
}
