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

// The list shows the held locks under the prefix with their holders and
// waiters; the detail adds the queue; a lock nobody holds is 404.
func TestListAndDetail(t *testing.T) {
	lk, _ := newLocker(t)
	ts := serve(t, lk)
	base := ts.URL + "/debug/locktag/"
	o1 := obtain(t, lk, "order:1")
	obtain(t, lk, "order:2")
	obtain(t, lk, "cart:1")

	// A waiter on order:1.
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	waited := make(chan error, 1)
	go func() {
		le, err := lk.Obtain(wctx, "order:1", locker.Params{Wait: time.Minute})
		if err == nil {
			_ = le.Release(context.Background())
		}
		waited <- err
	}()
	eventually(t, "waiter queued", func() bool {
		st, err := lk.Inspect(t.Context(), "order:1")
		return err == nil && st.Queued == 1
	})

	a := do(t, http.MethodGet, base+"api/locks?prefix=order:", "")
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("list: %d %s %q", a.status, a.header.Get("Content-Type"), a.body)
	}
	var p ops.Page
	a.decode(t, &p)
	var names []string
	for _, l := range p.Locks {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"order:1", "order:2"}) || p.Next != "" || p.Prefix != "order:" || p.Redacted || p.CanRelease {
		t.Fatalf("list: %+v", p)
	}
	i := slices.IndexFunc(p.Locks, func(l ops.Lock) bool { return l.Name == "order:1" })
	l := p.Locks[i]
	if len(l.Holders) != 1 || l.Holders[0].Fence != o1.Token() || l.Holders[0].Holds != 1 || l.Holders[0].Owner == "" ||
		l.Holders[0].LeaseLeftMs <= 0 || l.Holders[0].LeaseLeftMs > time.Minute.Milliseconds() {
		t.Fatalf("holder: %+v", l.Holders)
	}
	if l.Queued != 1 || l.LongestWaitMs < 0 || l.GaveUp != 0 || l.Waiters != nil || l.CanRelease {
		t.Fatalf("waiters in the list: %+v", l)
	}

	// Detail by handle and by name: the same lock, with its queue.
	for _, q := range []string{"handle=" + url.QueryEscape(l.Handle), "name=order:1"} {
		a = do(t, http.MethodGet, base+"api/lock?"+q, "")
		var d ops.Lock
		a.decode(t, &d)
		if a.status != http.StatusOK || d.Name != "order:1" || len(d.Waiters) != 1 || d.Waiters[0].WaitLeftMs <= 0 || d.Holders[0].Fence != o1.Token() {
			t.Fatalf("detail ?%s: %d %+v", q, a.status, d)
		}
	}

	// Unknown lock: 404 with a JSON error.
	a = do(t, http.MethodGet, base+"api/lock?name=order:404", "")
	if a.status != http.StatusNotFound || !strings.Contains(a.errorText(t), "no such lock") {
		t.Fatalf("unknown lock: %d %q", a.status, a.body)
	}

	// The page lists the same rows, without a release button.
	a = do(t, http.MethodGet, base+"?prefix=order:", "")
	if a.status != http.StatusOK || !strings.Contains(a.body, `data-name="order:1"`) || strings.Contains(a.body, "cart:1") ||
		strings.Contains(a.body, "release-button") || !strings.Contains(a.body, "read-only") {
		t.Fatalf("page: %d %s", a.status, a.body)
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("page CSP %q", csp)
	}
	for _, asset := range []string{"assets/ops.css", "assets/ops.js"} {
		if a := do(t, http.MethodGet, base+asset, ""); a.status != http.StatusOK || len(a.body) < 100 {
			t.Fatalf("%s: %d", asset, a.status)
		}
	}
	stop()
	testwaitRecv(t, waited)
}

// Following next lists every lock at least once, in pages of at most
// WithPageSize names per SCAN step collected.
func TestPaging(t *testing.T) {
	lk, srv := newLocker(t)
	ts := serve(t, lk, ops.WithPageSize(3))
	want := map[string]bool{}
	for i := range 7 {
		name := "job:" + string(rune('a'+i))
		obtain(t, lk, name)
		want[name] = true
	}
	// Unrelated keys, so SCAN has something to skip.
	for i := range 50 {
		if _, err := srv.Do("SET", "other:"+string(rune('a'+i%26))+string(rune('a'+i/26)), "x"); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("listing does not end")
		}
		a := do(t, http.MethodGet, ts.URL+"/debug/locktag/api/locks?prefix=job:&cursor="+url.QueryEscape(cursor), "")
		var p ops.Page
		a.decode(t, &p)
		if a.status != http.StatusOK {
			t.Fatalf("%d %q", a.status, a.body)
		}
		for _, l := range p.Locks {
			got[l.Name] = true
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("%s not listed", name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

// Bad input gets a clear answer and changes nothing.
func TestBadInput(t *testing.T) {
	lk, _ := newLocker(t)
	ts := serve(t, lk, ops.WithAuthorizer(allowAll))
	base := ts.URL + "/debug/locktag/"
	held := obtain(t, lk, "order:1")

	tests := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		msg                      string
	}{
		{"list by POST", "POST", "api/locks", "", nil, 405, "not allowed"},
		{"release by GET", "GET", "api/release", "", nil, 405, "not allowed"},
		{"page by DELETE", "DELETE", "", "", nil, 405, "not allowed"},
		{"unknown path", "GET", "api/nothing", "", nil, 404, "no such page"},
		{"no lock", "GET", "api/lock", "", nil, 400, "missing lock"},
		{"handle and name", "GET", "api/lock?name=a&handle=n.YQ", "", nil, 400, "not both"},
		{"malformed handle", "GET", "api/lock?handle=zz", "", nil, 400, "bad handle"},
		{"handle not base64", "GET", "api/lock?handle=n.%25%25", "", nil, 400, "bad handle"},
		{"encrypted handle on a plain handler", "GET", "api/lock?handle=e.AAAAAAAAAAAAAAAAAAAAAAAAAAAA", "", nil, 400, "bad handle"},
		{"name too long", "GET", "api/lock?name=" + strings.Repeat("x", 5000), "", nil, 400, "too long"},
		{"bad cursor", "GET", "api/locks?cursor=nope", "", nil, 400, "bad cursor"},
		{"prefix too long", "GET", "api/locks?prefix=" + strings.Repeat("x", 5000), "", nil, 400, "prefix too long"},
		{"release without the CSRF header", "POST", "api/release", `{"name":"order:1","reason":"r"}`, []string{"X-Locktag-Ops", ""}, 403, "X-Locktag-Ops"},
		{"release from another origin", "POST", "api/release", `{"name":"order:1","reason":"r"}`, []string{"Origin", "https://evil.example"}, 403, "another origin"},
		{"release cross-site", "POST", "api/release", `{"name":"order:1","reason":"r"}`, []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross-site"},
		{"release without a body", "POST", "api/release", "", nil, 400, "body"},
		{"release with bad JSON", "POST", "api/release", `{"name":`, nil, 400, "body"},
		{"release with an unknown field", "POST", "api/release", `{"name":"order:1","reason":"r","force":true}`, nil, 400, "unknown field"},
		{"release without a reason", "POST", "api/release", `{"name":"order:1"}`, nil, 400, "missing reason"},
		{"release with a blank reason", "POST", "api/release", `{"name":"order:1","reason":"  "}`, nil, 400, "missing reason"},
		{"release without a lock", "POST", "api/release", `{"reason":"r"}`, nil, 400, "missing lock"},
		{"release with a malformed handle", "POST", "api/release", `{"handle":"x","reason":"r"}`, nil, 400, "bad handle"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			header := tc.header
			if tc.method == "POST" && (len(header) == 0 || header[0] != "X-Locktag-Ops") {
				header = append([]string{"X-Locktag-Ops", "1"}, header...)
			}
			a := do(t, tc.method, base+tc.path, tc.body, header...)
			if a.status != tc.status || !strings.Contains(a.errorText(t), tc.msg) {
				t.Fatalf("%d %q, want %d with %q", a.status, a.body, tc.status, tc.msg)
			}
			if tc.status == 405 && a.header.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
		})
	}
	// Nothing changed: the lock is still held by the same lease.
	st, err := lk.Inspect(t.Context(), "order:1")
	if err != nil || st.Holder == nil || st.Holder.Fence != held.Token() || held.Context().Err() != nil {
		t.Fatalf("after bad input: %+v %v", st, err)
	}
}

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
	ts := serve(t, lk, ops.WithAuthorizer(authz), ops.WithRedaction(ops.HashNames([]byte("k"))))
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
	secret := []byte("page secret")
	opts := []ops.Option{ops.WithRedaction(ops.HashNames(secret)), ops.WithHandleKey([]byte("handle key"))}
	ts := serve(t, lk, opts...)
	other := serve(t, lk, append(opts, ops.WithHandleKey([]byte("another key")))...)
	same := serve(t, lk, opts...)
	base := ts.URL + "/debug/locktag/"
	obtain(t, lk, "user:alice@example.com")
	const raw = "alice@example.com"
	want := ops.HashNames(secret)("user:alice@example.com")
	if !strings.HasPrefix(want, "user:#") || strings.Contains(want, "alice") || want != ops.HashNames(secret)("user:alice@example.com") ||
		want == ops.HashNames([]byte("other"))("user:alice@example.com") {
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
