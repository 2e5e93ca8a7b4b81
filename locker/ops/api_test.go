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
