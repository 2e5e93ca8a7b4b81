package httpcore

import (
	"runtime"
	"testing"

	"github.com/locktag/locktag/internal/testwait"
)

// TestPerRouter: GetOrPut makes a router's value once; Put replaces it;
// an entry holds neither router nor value, and goes with its router.
func TestPerRouter(t *testing.T) {
	type router struct{ hook *int } // the value lives as long as the router keeps it
	var p PerRouter[router, int]
	made := 0
	mk := func() *int { made++; v := made; return &v }
	func() {
		r := &router{}
		v := p.GetOrPut(r, mk)
		r.hook = v
		if p.GetOrPut(r, mk) != v || made != 1 || p.Get(r) != v {
			t.Fatalf("GetOrPut made %d values", made)
		}
		w := 42
		r.hook = &w
		p.Put(r, &w)
		if p.Get(r) != &w || p.Len() != 1 {
			t.Fatal("Put did not replace the value")
		}
		if p.Get(&router{}) != nil {
			t.Fatal("a router without a value has one")
		}
	}()
	testwait.Eventually(t, "the dropped router's entry to go", func() bool {
		runtime.GC()
		return p.Len() == 0
	})
}
