package lockfiber

import (
	"runtime"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/internal/testwait"
)

// TestCheckRoutesHooksOnce: CheckRoutes installs its hook once per app,
// and the record of it holds no app: a dropped app is collected and its
// entry goes.
func TestCheckRoutesHooksOnce(t *testing.T) {
	before := hooks.Len()
	func() {
		app := fiber.New()
		if err := CheckRoutes(app); err != nil {
			t.Fatal(err)
		}
		h := hooks.Get(app)
		if err := CheckRoutes(app); err != nil {
			t.Fatal(err)
		}
		if h == nil || hooks.Get(app) != h || hooks.Len() != before+1 {
			t.Fatalf("hook %p then %p, %d apps recorded (was %d)", h, hooks.Get(app), hooks.Len(), before)
		}
	}()
	testwait.Eventually(t, "the dropped app's entry to go", func() bool {
		runtime.GC()
		return hooks.Len() <= before
	})
}
