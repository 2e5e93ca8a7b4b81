package lockecho

import (
	"runtime"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/internal/testwait"
)

// TestCheckRoutesKeepsNoEcho: the record CheckRoutes finds an Echo's
// RouteCheck by holds neither, so a checked Echo that is dropped is
// collected and its entry goes.
func TestCheckRoutesKeepsNoEcho(t *testing.T) {
	entries := checks.Len
	before := entries()
	func() {
		e := echo.New()
		if err := CheckRoutes(e); err != nil {
			t.Fatal(err)
		}
		if checks.Get(e) == nil {
			t.Fatal("no RouteCheck recorded")
		}
	}()
	testwait.Eventually(t, "the dropped Echo's entry to go", func() bool {
		runtime.GC()
		return entries() <= before
	})
}
