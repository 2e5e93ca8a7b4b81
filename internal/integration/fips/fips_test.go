//go:debug fips140=only

// Package fips_test runs locktag in FIPS 140-only mode (the //go:debug
// line above is GODEBUG=fips140=only for this test binary): a program
// that imports every library module starts, and locks, guards, the ops
// page and the test kit work on a real redis-server through each driver,
// the NOSCRIPT fallback included.
package fips_test

import (
	"context"
	"crypto/fips140"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/goredis"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/locktest"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/locker/rueidis"
	"github.com/locktag/locktag/middleware/stdhttp"

	// Every other library module: their package initialisation runs in
	// FIPS 140-only mode too.
	_ "github.com/locktag/locktag/interceptor"
	_ "github.com/locktag/locktag/interceptor/connectrpc"
	_ "github.com/locktag/locktag/interceptor/locktagv1"
	_ "github.com/locktag/locktag/keyexpr"
	_ "github.com/locktag/locktag/locker/job"
	_ "github.com/locktag/locktag/locker/job/gocronlock"
	_ "github.com/locktag/locktag/locker/lockotel"
	_ "github.com/locktag/locktag/middleware"
	_ "github.com/locktag/locktag/middleware/lockecho"
	_ "github.com/locktag/locktag/middleware/lockecho5"
	_ "github.com/locktag/locktag/middleware/lockfiber"
)

func enforced(t *testing.T) {
	t.Helper()
	if !fips140.Enforced() {
		t.Fatal("FIPS 140-only mode is not enforced: the test proves nothing")
	}
}

// TestDrivers: on each driver, the start-up check passes, a lock is
// obtained and released, and again after SCRIPT FLUSH (EVALSHA by the
// shipped hash, NOSCRIPT, EVAL); an idempotent request replays.
func TestDrivers(t *testing.T) {
	enforced(t)
	srv := redistest.Start(t)
	drivers := map[string]func(t *testing.T) driver.Driver{
		"redigo": func(t *testing.T) driver.Driver {
			pool := &redigolib.Pool{Dial: func() (redigolib.Conn, error) { return redigolib.Dial("tcp", srv.Addr()) }}
			t.Cleanup(func() { pool.Close() })
			return redigo.New(pool)
		},
		"goredis": func(t *testing.T) driver.Driver {
			c := goredislib.NewClient(&goredislib.Options{Addr: srv.Addr()})
			t.Cleanup(func() { c.Close() })
			return goredis.New(c)
		},
		"rueidis": func(t *testing.T) driver.Driver {
			c, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return rueidis.New(c)
		},
	}
	admin, err := redigolib.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for name, newDriver := range drivers {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			lk, err := locker.New(newDriver(t))
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Close()
			if err := lk.Check(ctx); err != nil {
				t.Fatalf("Check: %v", err)
			}
			for i := range 2 {
				if i == 1 {
					if _, err := admin.Do("SCRIPT", "FLUSH"); err != nil {
						t.Fatal(err)
					}
				}
				le, err := lk.Obtain(ctx, "fips:"+name, locker.Params{TTL: 5 * time.Second})
				if err != nil {
					t.Fatalf("Obtain %d: %v", i, err)
				}
				if err := le.Release(ctx); err != nil {
					t.Fatalf("Release %d: %v", i, err)
				}
			}
			runs := 0
			h := stdhttp.MustIdempotency(lk, guard.WithPublicScope()).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				fmt.Fprintf(w, "run %d", runs)
			}))
			for range 2 {
				r := httptest.NewRequest("POST", "/payments", strings.NewReader("{}"))
				r.Header.Set("Idempotency-Key", "fips-"+name+"-"+fmt.Sprint(time.Now().UnixNano()/1e9))
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Body.String() != "run 1" {
					t.Fatalf("idempotent request: %d %q", w.Code, w.Body)
				}
			}
		})
	}
}

// TestOpsPage: the ops page with redacted names (HMAC-SHA256) and sealed
// handles (AES-GCM) lists a held lock and force-releases it by its handle.
func TestOpsPage(t *testing.T) {
	enforced(t)
	srv := redistest.Start(t)
	pool := &redigolib.Pool{Dial: func() (redigolib.Conn, error) { return redigolib.Dial("tcp", srv.Addr()) }}
	defer pool.Close()
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	le, err := lk.Obtain(ctx, "user:alice", locker.Params{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	held := le.Context() // as a handler would have it: watched from here on
	h, err := ops.NewHandler(lk, ops.WithRedaction(ops.HashNames([]byte("a secret of 112 bits or more"))),
		ops.WithHandleKey([]byte("a handle key")), ops.WithAuthorizer(func(*http.Request, ops.Action, string) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.StripPrefix("/ops", h))
	defer ts.Close()
	res, err := http.Get(ts.URL + "/ops/api/locks")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "user:#") || strings.Contains(string(body), "alice") {
		t.Fatalf("the redacted list: %d %s", res.StatusCode, body)
	}
	m := regexp.MustCompile(`"handle":"(e\.[^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no sealed handle in %s", body)
	}
	req, err := http.NewRequest("POST", ts.URL+"/ops/api/release", strings.NewReader(`{"handle":"`+string(m[1])+`","reason":"fips test"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Locktag-Ops", "1")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("force-release by handle: %d %s", res.StatusCode, body)
	}
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder's context was not cancelled by the force-release")
	}
}

// TestKit: the test kit's embedded server runs locktag's scripts.
func TestKit(t *testing.T) {
	enforced(t)
	k := locktest.New(t)
	release := k.Hold("order:42")
	h := stdhttp.MustLock(k.Locker(), `key:"order:{path.id}"`)
	mux := http.NewServeMux()
	if err := h.Handle(mux, "POST /orders/{id}/pay", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/orders/42/pay", nil))
	if w.Code != http.StatusConflict {
		t.Fatalf("while held: %d, want 409", w.Code)
	}
	release()
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/orders/42/pay", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("after release: %d, want 200", w.Code)
	}
}
