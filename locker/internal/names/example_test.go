package names_test

import (
	"fmt"

	"github.com/locktag/locktag/locker/internal/names"
)

// ExampleLayout_Mutex shows a mutex's keys and channel under the default
// prefix, and the last-token key a Redlock Locker adds.
func ExampleLayout_Mutex() {
	lay := &names.Layout{Prefix: "locktag:"}
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
	fmt.Println(names.Label("shop@host-3", "POST /orders/:id/pay"))
	fmt.Println(names.Reason("  "))
	fmt.Printf("%q\n", names.Cut("naïve", 3))
	// Output:
	// shop@host-3; POST /orders/:id/pay
	// no reason given
	// "na"
}
