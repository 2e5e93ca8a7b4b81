package ops_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
)

// Without an authorizer nothing can be released: 403, no button.
func TestReadOnly(t *testing.T) {
	lk, _ := newLocker(t)
	ts := serve(t, lk)
	le := obtain(t, lk, "order:1")
	a := post(t, ts.URL+"/debug/locktag/api/release", `{"name":"order:1","reason":"stuck"}`)
	if a.status != http.StatusForbidden || !strings.Contains(a.errorText(t), "read-only") {
		t.Fatalf("release without authorizer: %d %q", a.status, a.body)
	}
	if le.Context().Err() != nil {
		t.Fatal("read-only handler touched the lease")
	}
	var d ops.Lock
	a = do(t, http.MethodGet, ts.URL+"/debug/locktag/api/lock?name=order:1", "")
	a.decode(t, &d)
	if d.CanRelease {
		t.Fatal("canRelease without authorizer")
	}
}

// The authorizer guards viewing (401/403) and releasing per lock, with
// the real name.
func TestAuthorizer(t *testing.T) {
	lk, _ := newLocker(t)
	var asked []string
	authz := func(r *http.Request, a ops.Action, name string) error {
		asked = append(asked, a.String()+" "+name)
		switch r.Header.Get("X-User") {
		case "":
			return ops.ErrUnauthenticated
		case "admin":
			return nil
		case "viewer":
			if a == ops.View {
				return nil
			}
		}
		return ops.ErrForbidden
	}
	ts := serve(t, lk, ops.WithAuthorizer(authz), ops.WithRedaction(ops.HashNames([]byte("a test redaction secret"))))
	base := ts.URL + "/debug/locktag/"
	le := obtain(t, lk, "user:alice@example.com")

	for _, path := range []string{"", "api/locks", "api/lock?name=user:alice@example.com"} {
		if a := do(t, "GET", base+path, ""); a.status != http.StatusUnauthorized {
			t.Errorf("GET %q anonymous: %d", path, a.status)
		}
		if a := do(t, "GET", base+path, "", "X-User", "nobody"); a.status != http.StatusForbidden {
			t.Errorf("GET %q by nobody: %d", path, a.status)
		}
		if a := do(t, "GET", base+path, "", "X-User", "viewer"); a.status != http.StatusOK {
			t.Errorf("GET %q by viewer: %d %q", path, a.status, a.body)
		}
	}
	var p ops.Page
	a := do(t, "GET", base+"api/locks", "", "X-User", "viewer")
	a.decode(t, &p)
	if len(p.Locks) != 1 || p.Locks[0].CanRelease || p.CanRelease {
		t.Fatalf("viewer's list: %+v", p)
	}
	if page := do(t, "GET", base, "", "X-User", "viewer"); strings.Contains(page.body, "release-button") || !strings.Contains(page.body, "not allowed") {
		t.Fatalf("viewer's page offers release: %s", page.body)
	}
	a = post(t, base+"api/release", `{"handle":"`+p.Locks[0].Handle+`","reason":"stuck"}`, "X-User", "viewer")
	if a.status != http.StatusForbidden || le.Context().Err() != nil {
		t.Fatalf("viewer's release: %d %q", a.status, a.body)
	}
	if !slices.Contains(asked, "release user:alice@example.com") {
		t.Fatalf("authorizer not asked with the real name: %q", asked)
	}
	a = do(t, "GET", base+"api/locks", "", "X-User", "admin")
	a.decode(t, &p)
	if len(p.Locks) != 1 || !p.Locks[0].CanRelease || !p.CanRelease {
		t.Fatalf("admin's list: %+v", p)
	}
	if page := do(t, "GET", base, "", "X-User", "admin"); !strings.Contains(page.body, "release-button") {
		t.Fatalf("admin's page has no release button: %s", page.body)
	}
}

// Redacted names never reach the page or the JSON; handles map back, and
// only on a handler with the same key.
func TestRedaction(t *testing.T) {
	lk, _ := newLocker(t)
	secret := []byte("the ops page secret")
	opts := []ops.Option{ops.WithRedaction(ops.HashNames(secret)), ops.WithHandleKey([]byte("handle key"))}
	ts := serve(t, lk, opts...)
	other := serve(t, lk, append(opts, ops.WithHandleKey([]byte("another key")))...)
	same := serve(t, lk, opts...)
	base := ts.URL + "/debug/locktag/"
	obtain(t, lk, "user:alice@example.com")
	const raw = "alice@example.com"
	want := ops.HashNames(secret)("user:alice@example.com")
	if !strings.HasPrefix(want, "user:#") || strings.Contains(want, "alice") || want != ops.HashNames(secret)("user:alice@example.com") ||
		want == ops.HashNames([]byte("another page secret"))("user:alice@example.com") {
		t.Fatalf("HashNames: %q", want)
	}

	a := do(t, "GET", base+"api/locks?prefix=user:", "")
	if strings.Contains(a.body, raw) || strings.Contains(a.body, "YWxpY2") /* base64 of alice */ {
		t.Fatalf("list leaks the name: %s", a.body)
	}
	var p ops.Page
	a.decode(t, &p)
	if len(p.Locks) != 1 || p.Locks[0].Name != want || !p.Redacted || !strings.HasPrefix(p.Locks[0].Handle, "e.") {
		t.Fatalf("redacted list: %+v", p)
	}
	h := p.Locks[0].Handle
	if page := do(t, "GET", base+"?prefix=user:", ""); strings.Contains(page.body, raw) || !strings.Contains(page.body, want) || !strings.Contains(page.body, "names redacted") {
		t.Fatalf("page leaks the name or lacks the redaction: %s", page.body)
	}
	for _, srv := range []string{ts.URL, same.URL} {
		a = do(t, "GET", srv+"/debug/locktag/api/lock?handle="+url.QueryEscape(h), "")
		var d ops.Lock
		a.decode(t, &d)
		if a.status != 200 || d.Name != want || strings.Contains(a.body, raw) {
			t.Fatalf("detail by handle on %s: %d %s", srv, a.status, a.body)
		}
	}
	// Another key, a tampered handle, a plain handle: 400.
	tampered := h[:len(h)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(h, "AA")]
	for _, tc := range []struct{ srv, handle string }{{other.URL, h}, {ts.URL, tampered}, {ts.URL, "n.dXNlcjphbGljZUBleGFtcGxlLmNvbQ"}} {
		a = do(t, "GET", tc.srv+"/debug/locktag/api/lock?handle="+url.QueryEscape(tc.handle), "")
		if a.status != 400 || !strings.Contains(a.errorText(t), "bad handle") {
			t.Fatalf("handle %q on %s: %d %s", tc.handle, tc.srv, a.status, a.body)
		}
	}
}

// Redis down: 503 with Retry-After, on the API and the page; no host leaked.
func TestRedisDown(t *testing.T) {
	lk, srv := newLocker(t)
	ts := serve(t, lk)
	srv.Stop()
	for _, path := range []string{"api/locks", "api/lock?name=a"} {
		a := do(t, "GET", ts.URL+"/debug/locktag/"+path, "")
		if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || a.errorText(t) != "redis unavailable" {
			t.Fatalf("%s: %d %q", path, a.status, a.body)
		}
	}
	a := do(t, "GET", ts.URL+"/debug/locktag/", "")
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "redis unavailable") || strings.Contains(a.body, "127.0.0.1") {
		t.Fatalf("page: %d %s", a.status, a.body)
	}
}

// Every kind is listed with its holders: a semaphore's permits, a
// read/write lock's readers, with labels and modes; the detail lists the
// waiters with theirs.
func TestKinds(t *testing.T) {
	lk, _ := newLocker(t)
	ts := serve(t, lk)
	hold := func(name string, p locker.Params) {
		t.Helper()
		p.TTL = time.Minute
		le, err := lk.Obtain(t.Context(), name, p)
		if err != nil {
			t.Fatalf("Obtain(%q): %v", name, err)
		}
		t.Cleanup(func() { _ = le.Release(context.Background()) })
	}
	hold("k:sem", locker.Params{Limit: 3, Label: "a"})
	hold("k:sem", locker.Params{Limit: 3, Label: "b"})
	hold("k:rw", locker.Params{Mode: locker.Read, Label: "r1"})
	hold("k:rw", locker.Params{Mode: locker.Read, Label: "r2"})
	hold("k:mutex", locker.Params{Label: "m"})
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	go func() {
		if le, err := lk.Obtain(wctx, "k:rw", locker.Params{Mode: locker.Write, Wait: time.Minute, Label: "w"}); err == nil {
			_ = le.Release(context.Background())
		}
	}()
	eventually(t, "a writer queued", func() bool {
		st, err := lk.Inspect(t.Context(), "k:rw")
		return err == nil && st.Queued == 1
	})

	var p ops.Page
	do(t, "GET", ts.URL+"/debug/locktag/api/locks?prefix=k:", "").decode(t, &p)
	got := map[string]ops.Lock{}
	for _, l := range p.Locks {
		got[l.Name] = l
	}
	labels := func(l ops.Lock) (out []string) {
		for _, h := range l.Holders {
			out = append(out, h.Label+"/"+h.Mode)
		}
		slices.Sort(out)
		return out
	}
	if l := got["k:sem"]; l.Kind != locker.KindSemaphore || l.Limit != 3 || !slices.Equal(labels(l), []string{"a/", "b/"}) {
		t.Errorf("semaphore: %+v", l)
	}
	if l := got["k:rw"]; l.Kind != locker.KindRW || l.Queued != 1 || !slices.Equal(labels(l), []string{"r1/read", "r2/read"}) {
		t.Errorf("read/write: %+v", l)
	}
	if l := got["k:mutex"]; l.Kind != locker.KindMutex || !slices.Equal(labels(l), []string{"m/"}) {
		t.Errorf("mutex: %+v", l)
	}
	var d ops.Lock
	do(t, "GET", ts.URL+"/debug/locktag/api/lock?name=k:rw", "").decode(t, &d)
	if len(d.Waiters) != 1 || d.Waiters[0].Label != "w" || d.Waiters[0].Mode != "write" {
		t.Errorf("read/write detail: %+v", d)
	}
	page := do(t, "GET", ts.URL+"/debug/locktag/?prefix=k:", "")
	for _, want := range []string{"semaphore (limit 3)", "read/write", `<span class="mode">read</span>`, `<span class="label">r1</span>`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	stop()
}
