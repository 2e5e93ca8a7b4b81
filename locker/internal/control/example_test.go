package control_test

import (
	"fmt"

	"github.com/locktag/locktag/locker/internal/control"
)

// ExampleEach matches a notice's owner tokens against a Table: only the
// Locker holding a token acts on it.
func ExampleEach() {
	var t control.Table[string]
	t.Add("tok-1", "order:42")
	control.Each("tok-1,tok-9 deploy stuck", func(token, reason string) {
		if key, ok := t.Get(token); ok {
			fmt.Printf("%s force-released: %s\n", key, reason)
		}
	})
	fmt.Println(control.Channel("locktag:"))
	// Output:
	// order:42 force-released: deploy stuck
	// locktag:ctl
}
