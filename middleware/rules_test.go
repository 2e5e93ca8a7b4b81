package middleware_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware"
)

// TestLockRules: one global middleware locks the routes in its table, each
// with its own tag, and lets every other request through untouched.
func TestLockRules(t *testing.T) {
	_, lk := setup(t)
	rules := middleware.Rules{
		"POST /orders/:id/pay": `key:"order:{path.id}"`,
		"PUT /carts/:user":     `key:"cart:{path.user}:{header.X-Device}"`,
		"GET /files/*path":     `key:"file:{path.path}"`,
	}
	r := gin.New()
	r.Use(middleware.LockRules(lk, rules))
	r.POST("/orders/:id/pay", leaseKey)
	r.GET("/orders/:id/pay", leaseKey) // same path, other method: not in the table
	r.PUT("/carts/:user", leaseKey)
	r.GET("/files/*path", leaseKey)
	r.GET("/health", leaseKey)
	if err := rules.Check(r.Routes()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, target string
		hdr            []string
		status         int
		want           string
	}{
		{"POST", "/orders/42/pay", nil, 200, "order:42"},
		{"GET", "/orders/42/pay", nil, 200, ""},
		{"PUT", "/carts/u7", []string{"X-Device", "phone"}, 200, "cart:u7:phone"},
		{"PUT", "/carts/u7", nil, 400, ""},
		{"GET", "/files/a/b.txt", nil, 200, "file:/a/b.txt"},
		{"GET", "/health", nil, 200, ""},
		{"GET", "/nowhere", nil, 404, ""},
	} {
		rec := do(r, tc.method, tc.target, "", tc.hdr...)
		if rec.Code != tc.status || (tc.status == 200 && rec.Body.String() != tc.want) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.target, rec.Code, rec.Body, tc.status, tc.want)
		}
	}

	// A rule's lock excludes the route's other requests.
	hold, err := lk.Obtain(t.Context(), "order:7", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release(t.Context())
	if rec := do(r, "POST", "/orders/7/pay", ""); rec.Code != http.StatusConflict {
		t.Fatalf("held lock: %d", rec.Code)
	}
}

// TestLockRulesErrors: rules are checked when the middleware is built.
func TestLockRulesErrors(t *testing.T) {
	_, lk := setup(t)
	for _, tc := range []struct {
		name  string
		rules middleware.Rules
		want  error
		msg   string
	}{
		{"lower-case method", middleware.Rules{"post /o/:id": `key:"o:{path.id}"`}, middleware.ErrBadRule, `bad rule "post /o/:id"`},
		{"no method", middleware.Rules{"/o/:id": `key:"o:{path.id}"`}, middleware.ErrBadRule, "want \"METHOD /route/pattern\""},
		{"path without slash", middleware.Rules{"POST o/:id": `key:"o:{path.id}"`}, middleware.ErrBadRule, "bad rule"},
		{"two spaces", middleware.Rules{"POST  /o/:id": `key:"o:{path.id}"`}, middleware.ErrBadRule, "bad rule"},
		{"no such route parameter", middleware.Rules{"POST /o/:id": `key:"o:{path.od}"`}, middleware.ErrBadRule,
			"rule \"POST /o/:id\": keyexpr: tag `key:\"o:{path.od}\"`: field key at byte 7: template \"o:{path.od}\": placeholder {path.od} at byte 2: the rule's route has no parameter :od (it has :id)"},
		{"bad tag", middleware.Rules{"POST /o/:id": `key:"o:{path.id}" wait:"x"`}, keyexpr.ErrBadDuration, `rule "POST /o/:id"`},
		{"first error in key order", middleware.Rules{"A /x": `key:"{nope}"`, "B /x": `key:""`}, keyexpr.ErrUnknownSource, `rule "A /x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middleware.NewLockRules(lk, tc.rules)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %v saying %q", err, tc.want, tc.msg)
			}
			defer func() {
				if p := recover(); p == nil {
					t.Fatal("LockRules did not panic")
				}
			}()
			middleware.LockRules(lk, tc.rules)
		})
	}
}

// TestRulesCheck: Check names the rules that match no registered route.
func TestRulesCheck(t *testing.T) {
	r := gin.New()
	r.POST("/orders/:id/pay", leaseKey)
	rules := middleware.Rules{
		"POST /orders/:id/pay": `key:"order:{path.id}"`,
		"POST /order/:id/pay":  `key:"order:{path.id}"`,
		"GET /orders/:id/pay":  `key:"order:{path.id}"`,
	}
	err := rules.Check(r.Routes())
	if !errors.Is(err, middleware.ErrBadRule) || err.Error() != `guard: bad rule: no route registered for ["GET /orders/:id/pay" "POST /order/:id/pay"]` {
		t.Fatalf("Check: %v", err)
	}
}
