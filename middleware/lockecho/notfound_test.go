package lockecho_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho"
)

// TestGroupNotFound: a path under a locked group that matches none of its
// routes reaches the group's catch-all, which Echo adds so that group
// middleware runs: it is a plain 404, unlocked, and no tag mistake (the
// catch-all lacks the parameters the group's routes have), so it cannot
// make the service's health report a misconfiguration. The group's own
// route still locks.
func TestGroupNotFound(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	g := e.Group("/shops/:shop", lockecho.Lock(lk, `key:"shop:{path.shop}:{path.item}"`))
	g.POST("/items/:item", func(c echo.Context) error { return c.String(200, locker.FromContext(c.Request().Context()).Key()) })
	for _, path := range []string{"/shops/x/nothing/here", "/shops/x"} {
		if rec := do(e, http.MethodGet, path, ""); rec.Code != http.StatusNotFound {
			t.Fatalf("GET %s: %d %s, want 404", path, rec.Code, rec.Body)
		}
	}
	if m := guard.Mistakes(lk); len(m) != 0 {
		t.Fatalf("a 404 recorded tag mistakes: %+v", m)
	}
	if rec := do(e, http.MethodPost, "/shops/x/items/7", ""); rec.Code != 200 || rec.Body.String() != "shop:x:7" {
		t.Fatalf("the group's route: %d %s", rec.Code, rec.Body)
	}
}
