package reliability

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// proxied starts a Redis server and a toxiproxy in front of it.
func proxied(t *testing.T) (*redistest.Server, *faults.Proxy) {
	srv := redistest.Start(t)
	return srv, faults.NewProxy(t, srv.Addr())
}

// TestLatencyLongerThanTTL: replies delayed by more than the lock's TTL.
func TestLatencyLongerThanTTL(t *testing.T) {
	srv, px := proxied(t)

	// Delay beyond the call timeout: the acquire fails with a clear
	// ErrUnavailable (an i/o timeout), is cleaned up by token, and a fresh
	// Obtain works once the link is healthy.
	t.Run("beyond call timeout", func(t *testing.T) {
		lk := newLocker(t, px.Pool(t, faults.PoolOptions{}), locker.WithCallTimeout(300*time.Millisecond))
		tox := px.Latency(faults.Downstream, 600*time.Millisecond, 0)
		start := time.Now()
		le, err := lk.Obtain(context.Background(), "slow1", locker.Params{TTL: 200 * time.Millisecond})
		px.Remove(tox)
		if err == nil {
			t.Fatalf("obtained through a link slower than the TTL (token %d)", le.Token())
		}
		if !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("err = %v, want ErrUnavailable (not a busy lock)", err)
		}
		t.Logf("error after %v: %v", time.Since(start).Round(time.Millisecond), err)
		eventually(t, 5*time.Second, "no lock state left", func() bool { return exists(t, srv, lockKeys("slow1")...) == 0 })
		le, err = lk.Obtain(context.Background(), "slow1", locker.Params{TTL: time.Second})
		if err != nil {
			t.Fatalf("after the spike: %v", err)
		}
		_ = le.Release(context.Background())
	})

	// A delay between the TTL and the call timeout (the reply arrives after
	// the lease it grants has ended): TestLatencyLongerThanTTLNotObtained.
}

// TestLatencyLongerThanTTLNotObtained: an acquire whose reply arrives after
// the TTL it asked for is "not acquired" with a clear error (locker.ErrGrantExpired,
// which also matches ErrNotObtained and not ErrUnavailable: Redis answered,
// the lock was just not usable any more, so the adapters answer as for a
// busy lock), not a Lease that is already expired, and the lock it took is
// released.
func TestLatencyLongerThanTTLNotObtained(t *testing.T) {
	srv, px := proxied(t)
	lk := newLocker(t, px.Pool(t, faults.PoolOptions{}), locker.WithCallTimeout(2*time.Second))
	tox := px.Latency(faults.Downstream, 400*time.Millisecond, 0)
	le, err := lk.Obtain(context.Background(), "slow3", locker.Params{TTL: 200 * time.Millisecond})
	px.Remove(tox)
	if err == nil {
		t.Fatalf("Obtain returned a lease (lost=%t) for a reply that arrived after its TTL; want an error", le.Lost())
	}
	if !errors.Is(err, locker.ErrGrantExpired) || !errors.Is(err, locker.ErrNotObtained) || errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrGrantExpired and ErrNotObtained, not ErrUnavailable", err)
	}
	if n := exists(t, srv, lockKeys("slow3")[0]); n != 0 {
		t.Fatal("the late lock was not released")
	}

	// Through the Gin adapter a late grant is a busy lock: 409 with a
	// retry hint, and the handler does not run.
	r, runs := lockRouter(t, lk, `key:"order:{path.id}" expire:"200ms"`)
	tox = px.Latency(faults.Downstream, 400*time.Millisecond, 0)
	w := serveHTTP(r, httptest.NewRequest(http.MethodPost, "/orders/8/pay", nil))
	px.Remove(tox)
	if w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" || runs.Load() != 0 {
		t.Fatalf("late grant through Gin: status %d, Retry-After %q, runs %d; want 409 with Retry-After and no run",
			w.Code, w.Header().Get("Retry-After"), runs.Load())
	}
}

// lockRouter is a Gin router with one locked route that counts its runs.
func lockRouter(t *testing.T, lk *locker.Locker, tag string) (*gin.Engine, *atomic.Int64) {
	var runs atomic.Int64
	r := gin.New()
	r.POST("/orders/:id/pay", middleware.Lock(lk, tag), func(c *gin.Context) {
		runs.Add(1)
		c.Status(http.StatusNoContent)
	})
	return r, &runs
}

func serveHTTP(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestReplyLostAfterAcquire: the server applies the acquire, but its reply
// never reaches the client (a black hole on the downstream direction). The
// client reports failure (503 from the Gin adapter), the handler never
// runs, and the lock the server did create is released by token by the
// locker's clean-up — well before its 30s lease would have ended.
func TestReplyLostAfterAcquire(t *testing.T) {
	srv, px := proxied(t)
	lk := newLocker(t, px.Pool(t, faults.PoolOptions{}), locker.WithCallTimeout(500*time.Millisecond))
	r, runs := lockRouter(t, lk, `key:"order:{path.id}" expire:"30s"`)
	// Load the scripts first: on a cold server the lost reply would be
	// NOSCRIPT and nothing would have been applied.
	if w := serveHTTP(r, httptest.NewRequest(http.MethodPost, "/orders/6/pay", nil)); w.Code != http.StatusNoContent {
		t.Fatalf("warm-up: %d", w.Code)
	}
	runs.Store(0)

	sets := setCalls(t, srv)
	tox := px.Timeout(faults.Downstream, 0)
	w := serveHTTP(r, httptest.NewRequest(http.MethodPost, "/orders/7/pay", nil))
	// The acquire wrote the lock (its one SET; the clean-up by token writes
	// none): the server ran it. (Read directly, not through the proxy.)
	applied := setCalls(t, srv) > sets
	px.Remove(tox)

	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503; body %s", w.Code, w.Body)
	}
	if runs.Load() != 0 {
		t.Fatal("handler ran without a confirmed lock")
	}
	if !applied {
		t.Fatal("the server did not apply the acquire: the scenario did not happen")
	}
	// Commands still reach the server, so the clean-up by token (its reply
	// lost too) has already removed the lock; a second one follows a call
	// timeout later. Either way nothing waits for the 30s lease.
	eventually(t, 5*time.Second, "lock released by token", func() bool { return exists(t, srv, lockKeys("order:7")...) == 0 })
	if w := serveHTTP(r, httptest.NewRequest(http.MethodPost, "/orders/7/pay", nil)); w.Code != http.StatusNoContent || runs.Load() != 1 {
		t.Fatalf("after recovery: status %d, runs %d", w.Code, runs.Load())
	}
}

// setCalls is how many SET commands srv has run, scripts' included (INFO
// commandstats).
func setCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// TestConnectionReset: a TCP reset in the middle of a script call.
func TestConnectionReset(t *testing.T) {
	srv, px := proxied(t)
	lk := newLocker(t, px.Pool(t, faults.PoolOptions{}), locker.WithCallTimeout(500*time.Millisecond))
	ctx := context.Background()

	for _, s := range []faults.Stream{faults.Upstream, faults.Downstream} {
		// Upstream: the command is lost with the connection. Downstream: the
		// server ran the script and the reply is lost. Either way the call
		// fails with ErrUnavailable, nothing is left behind, and the next
		// call — after a SCRIPT FLUSH too — runs on a fresh connection.
		t.Run(string(s), func(t *testing.T) {
			key := "reset-" + string(s)
			tox := px.ResetPeer(s, 0)
			_, err := lk.Obtain(ctx, key, locker.Params{TTL: 30 * time.Second})
			px.Remove(tox)
			if !errors.Is(err, locker.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			eventually(t, 5*time.Second, "nothing left", func() bool { return exists(t, srv, lockKeys(key)...) == 0 })
			if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
			le, err := lk.Obtain(ctx, key, locker.Params{TTL: 30 * time.Second})
			if err != nil {
				t.Fatalf("after the reset: %v", err)
			}
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}

	// Resets while a watchdog lease is renewed: failed renewals are retried
	// until the local deadline, so a burst of resets shorter than the lease
	// costs nothing — no false lock loss.
	t.Run("during renewal", func(t *testing.T) {
		const lease = time.Second
		lk := newLocker(t, px.Pool(t, faults.PoolOptions{}), locker.WithWatchdog(lease, lease/5), locker.WithCallTimeout(200*time.Millisecond))
		le, err := lk.Obtain(ctx, "reset-renew", locker.Params{})
		if err != nil {
			t.Fatal(err)
		}
		tox := px.ResetPeer(faults.Downstream, 0)
		time.Sleep(lease / 3) // the fault's duration
		px.Remove(tox)
		time.Sleep(lease) // a whole lease after the burst: renewals must have resumed
		if le.Lost() {
			t.Fatalf("lease lost to a %v burst of resets: %v", lease/3, context.Cause(le.Context()))
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestClientPause: CLIENT PAUSE for twice the lease while a watchdog lock
// is held. Renewals stall, so the holder gives the lock up by its local
// deadline (it cannot know whether Redis kept it) instead of trusting a
// lease it cannot confirm; after the pause the lock expires in Redis and a
// waiter gets it with a larger token.
func TestClientPause(t *testing.T) {
	srv := redistest.Start(t)
	const lease, slack = time.Second, 1500 * time.Millisecond
	holder := newLocker(t, srv.Pool(t), locker.WithWatchdog(lease, lease/5), locker.WithCallTimeout(300*time.Millisecond))
	le, err := holder.Obtain(context.Background(), "pause", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	obtained := time.Now()
	if err := faults.ClientPause(srv, 2*lease, false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-le.Context().Done():
	case <-time.After(lease + slack):
		t.Fatal("holder kept a lease it could not renew")
	}
	if d := time.Since(obtained); d > lease+slack {
		t.Errorf("loss noticed after %v; lease %v", d, lease)
	}
	if !errors.Is(context.Cause(le.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(le.Context()))
	}
	lk := newLocker(t, srv.Pool(t))
	le2, err := lk.Obtain(context.Background(), "pause", locker.Params{Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("after the pause: %v", err)
	}
	if le2.Token() <= le.Token() {
		t.Fatalf("token %d after %d", le2.Token(), le.Token())
	}
	_ = le2.Release(context.Background())
}
