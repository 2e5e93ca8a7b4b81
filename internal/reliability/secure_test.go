package reliability

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

const (
	secret      = "s3cret-Pa55word-9f1c"   // the server's password
	wrongSecret = "wr0ng-Pa55word-77aa"    // what a misconfigured client sends
	aclSecret   = "acl-user-Pa55word-41d0" // the ACL user's password
)

// noSecrets fails if msg contains a password.
func noSecrets(t *testing.T, what, msg string) {
	t.Helper()
	for _, s := range []string{secret, wrongSecret, aclSecret} {
		if strings.Contains(msg, s) {
			t.Errorf("%s leaks a password: %q", what, msg)
		}
	}
}

// useLock obtains, waits for (through the shared subscriber connection)
// and releases a lock with lk, to show every path works.
func useLock(t *testing.T, lk *locker.Locker, key string) {
	t.Helper()
	ctx := context.Background()
	le, err := lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("obtain with the right credentials: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		w, err := lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second, Wait: 10 * time.Second})
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 15*time.Second, "the waiter queued", func() bool {
		st, err := lk.Inspect(ctx, key)
		return err == nil && st.Queued == 1
	})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := within(t, 15*time.Second, "waiter", got); err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

// startupCheck is what an application should run at start-up: one PING
// through the pool it gives the Locker (locker.New does not dial).
func startupCheck(pool *redis.Pool) error {
	c := pool.Get()
	defer c.Close()
	_, err := c.Do("PING")
	return err
}

// TestAuthAndACL: redis-server with --requirepass and an ACL user. The
// right credentials work for obtain, wait and release; a wrong password, a
// missing one and a user without permission on locktag's keys fail with a
// clear error (WRONGPASS / NOAUTH / NOPERM) at the start-up check and on the
// first Obtain (ErrUnavailable, not a busy lock); no password appears in
// any error or response.
func TestAuthAndACL(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", secret))
	if err := faults.ACLSetUser(srv, "locky", aclSecret, "~locktag:*", "&locktag:*", "+@all"); err != nil {
		t.Fatal(err)
	}
	if err := faults.ACLSetUser(srv, "stranger", aclSecret, "~other:*", "&other:*", "+@all"); err != nil {
		t.Fatal(err)
	}
	pool := func(opts ...redis.DialOption) *redis.Pool {
		return faults.NewPool(t, srv.Addr(), faults.PoolOptions{Timeout: 2 * time.Second, DialOptions: opts})
	}

	t.Run("right password", func(t *testing.T) { useLock(t, newLocker(t, srv.Pool(t)), "auth") })
	t.Run("ACL user", func(t *testing.T) {
		useLock(t, newLocker(t, pool(redis.DialUsername("locky"), redis.DialPassword(aclSecret))), "acl")
	})

	for _, c := range []struct {
		name string
		opts []redis.DialOption
		want string
	}{
		{"wrong password", []redis.DialOption{redis.DialPassword(wrongSecret)}, "WRONGPASS"},
		{"no password", nil, "NOAUTH"},
		{"ACL user, wrong password", []redis.DialOption{redis.DialUsername("locky"), redis.DialPassword(wrongSecret)}, "WRONGPASS"},
		{"ACL user without permission", []redis.DialOption{redis.DialUsername("stranger"), redis.DialPassword(aclSecret)}, "NOPERM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pool(c.opts...)
			err := startupCheck(p)
			if c.want == "NOPERM" {
				err = nil // PING is allowed; the keys are not
			} else if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start-up check: %v, want %s", err, c.want)
			}
			if err != nil {
				noSecrets(t, "start-up error", err.Error())
			}
			lk := newLocker(t, p)
			_, err = lk.Obtain(context.Background(), "auth", locker.Params{})
			if !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrNotObtained) {
				t.Fatalf("obtain: %v, want ErrUnavailable only", err)
			}
			// Redis refuses a long unauthenticated command (EVALSHA with its
			// keys) before it can say NOAUTH.
			if !strings.Contains(err.Error(), c.want) && !(c.want == "NOAUTH" && strings.Contains(err.Error(), "unauthenticated")) {
				t.Errorf("obtain error %q does not say %s", err, c.want)
			}
			noSecrets(t, "obtain error", err.Error())
			r, runs := lockRouter(t, lk, `key:"order:{path.id}"`)
			w := serveHTTP(r, httptest.NewRequest(http.MethodPost, "/orders/1/pay", nil))
			if w.Code != http.StatusServiceUnavailable || runs.Load() != 0 {
				t.Fatalf("gin: %d, runs %d; want 503, 0", w.Code, runs.Load())
			}
			noSecrets(t, "response", w.Body.String())
			if strings.Contains(w.Body.String(), c.want) || strings.Contains(w.Body.String(), srv.Addr()) {
				t.Errorf("response tells the client about Redis: %s", w.Body)
			}
		})
	}
}

// TestTLS: redis-server listening only on TLS, with a CA and server
// certificate generated by the test, and a password. The right CA and
// password work for obtain, wait and release; a client that does not trust
// the CA, one that speaks plain TCP to the TLS port and one with a wrong
// password fail with a clear error; no password leaks.
func TestTLS(t *testing.T) {
	certs := faults.NewCerts(t)
	s := faults.StartSecure(t, faults.SecureOptions{Certs: certs, RequirePass: secret})
	pool := func(opts ...redis.DialOption) *redis.Pool {
		return faults.NewPool(t, s.Addr(), faults.PoolOptions{Timeout: 2 * time.Second, DialOptions: opts})
	}
	t.Run("right CA and password", func(t *testing.T) { useLock(t, newLocker(t, pool(s.DialOptions("", secret)...)), "tls") })

	for _, c := range []struct {
		name string
		opts []redis.DialOption
		want string
	}{
		{"unknown CA", []redis.DialOption{redis.DialUseTLS(true), redis.DialTLSConfig(&tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}), redis.DialPassword(secret)}, "certificate signed by unknown authority"},
		{"wrong server name", []redis.DialOption{redis.DialUseTLS(true), redis.DialTLSConfig(&tls.Config{RootCAs: certs.CAPool, ServerName: "redis.example", MinVersion: tls.VersionTLS12}), redis.DialPassword(secret)}, "certificate"},
		{"plain TCP to the TLS port", []redis.DialOption{redis.DialPassword(secret)}, ""},
		{"wrong password", append(s.DialOptions("", ""), redis.DialPassword(wrongSecret)), "WRONGPASS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pool(c.opts...)
			err := startupCheck(p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start-up check: %v, want an error saying %q", err, c.want)
			}
			t.Logf("start-up error: %v", err)
			noSecrets(t, "start-up error", err.Error())
			_, err = newLocker(t, p).Obtain(context.Background(), "tls", locker.Params{})
			if !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrNotObtained) {
				t.Fatalf("obtain: %v, want ErrUnavailable only", err)
			}
			noSecrets(t, "obtain error", err.Error())
		})
	}
}
