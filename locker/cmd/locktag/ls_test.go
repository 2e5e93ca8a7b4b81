package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// shop is a set of locks of every kind, a rate key and two idempotency
// records (one in flight with a caller waiting, one done), held by two
// in-process Lockers as two services would.
type shop struct {
	args []string
	a, b *session
	// record is in flight, owned by recordOwner, claimed with the
	// fingerprint whose SHA-256 is recordFP; done is completed, with
	// doneFP.
	record, recordOwner, recordFP string
	done, doneFP                  string
	// owners of the holders and waiters, by role.
	orderHolder, orderWaiter, filesReader, filesWriter string
	exports                                            []string
}

// sha256Hex is the SHA-256 of s in hex: a record's stored fingerprint.
func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func newShop(t *testing.T) *shop {
	t.Helper()
	srv := redistest.Start(t)
	sh := &shop{args: []string{"--addr", srv.Addr()}}
	sh.a, sh.b = sessionFor(t, sh.args...), sessionFor(t, sh.args...)
	ctx := context.Background()
	obtain := func(s *session, name string, p locker.Params) {
		t.Helper()
		if _, err := s.lk.Obtain(ctx, name, p); err != nil {
			t.Fatal(err)
		}
	}
	wait, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	queue := func(s *session, name string, p locker.Params) {
		p.Wait = time.Minute
		wg.Go(func() { _, _ = s.lk.Obtain(wait, name, p) })
	}
	obtain(sh.a, "order:42", locker.Params{Label: "checkout pid 1"})
	queue(sh.b, "order:42", locker.Params{Label: "checkout pid 2"})
	obtain(sh.a, "exports", locker.Params{Limit: 2, Label: "export 1"})
	obtain(sh.b, "exports", locker.Params{Limit: 2, Label: "export 2"})
	obtain(sh.a, "files", locker.Params{Mode: locker.Read, Label: "reader"})
	queue(sh.b, "files", locker.Params{Mode: locker.Write, Label: "writer"})
	if _, err := sh.a.lk.Allow(ctx, "api:alice", locker.RateParams{Limit: 10, Period: time.Second, Burst: 5}); err != nil {
		t.Fatal(err)
	}
	sh.record, sh.recordFP = locker.IdempotencyName("POST /payments", "alice", "k1"), sha256Hex("10 EUR")
	if _, err := sh.a.lk.Idempotent(ctx, sh.record, "10 EUR", locker.IdempotencyParams{}); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		_, _ = sh.b.lk.Idempotent(wait, sh.record, "10 EUR", locker.IdempotencyParams{Wait: time.Minute})
	})
	sh.done, sh.doneFP = locker.IdempotencyName("POST /payments", "bob", "k9"), sha256Hex("5 EUR")
	c, err := sh.b.lk.Idempotent(ctx, sh.done, "5 EUR", locker.IdempotencyParams{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(ctx, []byte("receipt")); err != nil {
		t.Fatal(err)
	}
	var order, files *locker.State
	var record locker.IdempotencyState
	testwait.Eventually(t, "the waiters queued", func() bool {
		var err1, err2, err3 error
		order, err1 = sh.a.lk.Inspect(ctx, "order:42")
		files, err2 = sh.a.lk.Inspect(ctx, "files")
		record, _, err3 = sh.a.lk.InspectIdempotency(ctx, sh.record)
		return err1 == nil && err2 == nil && err3 == nil && order.Queued == 1 && files.Queued == 1 && record.Waiting == 1
	})
	sh.recordOwner = record.Owner
	sh.orderHolder, sh.orderWaiter = order.Holders[0].Owner, order.Waiters[0].Owner
	sh.filesReader, sh.filesWriter = files.Holders[0].Owner, files.Waiters[0].Owner
	exports, err := sh.a.lk.Inspect(ctx, "exports")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range exports.Holders {
		sh.exports = append(sh.exports, h.Owner)
	}
	return sh
}

// rows are the first n whitespace-separated fields of each line of s
// that starts with prefix.
func rows(s, prefix string, n int) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			out = append(out, strings.Join(f[:min(n, len(f))], " "))
		}
	}
	return out
}

func TestLs(t *testing.T) {
	sh := newShop(t)
	r := locktag(t, append(sh.args, "ls")...).want(t, exitOK)
	for _, want := range []string{
		"NAME      KIND          ROLE            OWNER                   FENCE             HOLDS  LEFT   FOR",
		"RATE KEY   REMAINING  BURST  INTERVAL  FULL IN",
		"IDEMPOTENCY RECORD                                STATE      FINGERPRINT   OWNER                   EXPIRES IN  WAITING",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ls lacks %q:\n%s", want, r.stdout)
		}
	}
	got := rows(r.stdout, "order:42", 5)
	want := []string{"order:42 mutex holder " + sh.orderHolder + " ", "order:42 mutex waiter 1 " + sh.orderWaiter}
	if len(got) != 2 || !strings.HasPrefix(got[0], want[0]) || got[1] != want[1] {
		t.Errorf("ls's order:42 rows %q, want %q", got, want)
	}
	if got := rows(r.stdout, "files", 5); len(got) != 2 || got[0] != "files read/write holder read "+sh.filesReader || got[1] != "files read/write waiter 1 write" {
		t.Errorf("ls's files rows %q", got)
	}
	if got := rows(r.stdout, "exports", 3); len(got) != 2 || got[0] != "exports semaphore(2) holder" {
		t.Errorf("ls's exports rows %q", got)
	}
	if got := rows(r.stdout, "api:alice", 3); len(got) != 1 || got[0] != "api:alice 4 5" {
		t.Errorf("ls's rate row %q", got)
	}
	if !strings.Contains(r.stdout, "checkout pid 1") || !strings.Contains(r.stdout, "checkout pid 2") {
		t.Errorf("ls lacks the labels:\n%s", r.stdout)
	}
	// Records: state, the fingerprint's first 12 digits, owner, expiry,
	// waiters.
	if got := rows(r.stdout, sh.record, 7); len(got) != 1 ||
		!strings.HasPrefix(got[0], sh.record+" in flight "+sh.recordFP[:12]+" "+sh.recordOwner+" ") || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("ls's in-flight record row %q", got)
	}
	if got := rows(r.stdout, sh.done, 6); len(got) != 1 ||
		!strings.HasPrefix(got[0], sh.done+" done "+sh.doneFP[:12]+" - ") || !strings.HasSuffix(got[0], " 0") {
		t.Errorf("ls's done record row %q", got)
	}

	var l listing
	locktag(t, append(sh.args, "-o", "json", "ls")...).want(t, exitOK).decode(t, &l)
	names := func(ls []lockOut) (out []string) {
		for _, x := range ls {
			out = append(out, x.Kind+" "+x.Name)
		}
		return out
	}
	if got := names(l.Locks); !slices.Equal(got, []string{"semaphore exports", "read/write files", "mutex order:42"}) {
		t.Fatalf("ls -o json locks %q", got)
	}
	exports, files, order := l.Locks[0], l.Locks[1], l.Locks[2]
	if exports.Limit != 2 || len(exports.Holders) != 2 || exports.Queued != 0 {
		t.Errorf("exports %+v", exports)
	}
	for _, h := range exports.Holders {
		if !slices.Contains(sh.exports, h.Owner) || h.Fence == 0 || h.Holds != 1 || h.LeaseLeftMs <= 0 || !strings.HasPrefix(h.Label, "export ") {
			t.Errorf("exports holder %+v", h)
		}
	}
	if h, w := files.Holders, files.Waiters; len(h) != 1 || h[0].Mode != "read" || h[0].Owner != sh.filesReader ||
		len(w) != 1 || w[0].Mode != "write" || w[0].Owner != sh.filesWriter || w[0].Position != 1 || w[0].Label != "writer" {
		t.Errorf("files %+v", files)
	}
	if h, w := order.Holders, order.Waiters; len(h) != 1 || h[0].Owner != sh.orderHolder || h[0].Label != "checkout pid 1" ||
		h[0].LeaseLeftMs <= 0 || h[0].LeaseLeftMs > 30_000 || len(w) != 1 || w[0].Owner != sh.orderWaiter ||
		w[0].WaitLeftMs <= 0 || w[0].Label != "checkout pid 2" || order.Queued != 1 {
		t.Errorf("order:42 %+v", order)
	}
	if len(l.Rates) != 1 || l.Rates[0] != (rateOut{Name: "api:alice", Remaining: 4, Burst: 5, IntervalUs: 100_000, ResetMs: l.Rates[0].ResetMs}) || l.Rates[0].ResetMs <= 0 {
		t.Errorf("rates %+v", l.Rates)
	}
	records := map[string]recordOut{}
	for _, x := range l.Idempotency {
		records[x.Name] = x
	}
	if x := records[sh.record]; len(l.Idempotency) != 2 || x.State != locker.IdempotencyInFlight || x.Fingerprint != sh.recordFP ||
		x.Owner != sh.recordOwner || x.ExpiresInMs <= 0 || x.ExpiresInMs > 30_000 || x.Waiting != 1 {
		t.Errorf("the in-flight record %+v (of %+v)", x, l.Idempotency)
	}
	if x := records[sh.done]; x.State != locker.IdempotencyDone || x.Fingerprint != sh.doneFP || x.Owner != "" ||
		x.ExpiresInMs <= 3_500_000 || x.ExpiresInMs > 3_600_000 || x.Waiting != 0 {
		t.Errorf("the done record %+v", x)
	}
	if !slices.IsSortedFunc(l.Idempotency, func(a, b recordOut) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("the records are not sorted by name: %+v", l.Idempotency)
	}
	if l.Prefix != "locktag:" || l.Truncated || len(l.Refused) != 0 {
		t.Errorf("listing %+v", l)
	}

	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"order:", []string{"order:42"}},
		{"*:42", []string{"order:42"}},
		{"?iles", []string{"files"}},
		{"api:*", []string{"api:alice"}},
		{"idem:", sorted(sh.record, sh.done)},
		{sh.record, []string{sh.record}},
		{"nothing", nil},
	} {
		var l listing
		locktag(t, append(sh.args, "ls", tc.pattern, "-o", "json")...).want(t, exitOK).decode(t, &l)
		var got []string
		for _, x := range l.Locks {
			got = append(got, x.Name)
		}
		for _, x := range l.Rates {
			got = append(got, x.Name)
		}
		for _, x := range l.Idempotency {
			got = append(got, x.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ls %s: %q, want %q", tc.pattern, got, tc.want)
		}
	}
	r = locktag(t, append(sh.args, "ls", "nothing")...).want(t, exitOK)
	if r.stdout != "nothing under the prefix \"locktag:\" matches \"nothing\"\n" {
		t.Errorf("an empty ls says %q", r.stdout)
	}
	locktag(t, append(sh.args, "ls", "--limit", "2", "-o", "json")...).want(t, exitOK).decode(t, &l)
	if !l.Truncated || len(l.Locks)+len(l.Rates)+len(l.Idempotency) != 2 {
		t.Errorf("ls --limit 2: %+v", l)
	}
	r = locktag(t, append(sh.args, "ls", "--limit", "2")...).want(t, exitOK)
	if !strings.Contains(r.stdout, "more than 2 names match") {
		t.Errorf("ls --limit 2 does not say it cut:\n%s", r.stdout)
	}
	// Another prefix sees nothing.
	if r := locktag(t, append(sh.args, "--prefix", "other:", "ls")...).want(t, exitOK); !strings.HasPrefix(r.stdout, "nothing under the prefix \"other:\"") {
		t.Errorf("ls under another prefix: %s", r.stdout)
	}
}

func TestInspect(t *testing.T) {
	sh := newShop(t)
	r := locktag(t, append(sh.args, "inspect", "order:42")...).want(t, exitOK)
	lines := strings.Split(r.stdout, "\n")
	if lines[0] != "order:42: mutex, held, 1 waiting" || !strings.HasPrefix(lines[1], "NAME ") || len(lines) != 5 {
		t.Errorf("inspect order:42:\n%s", r.stdout)
	}
	if got := rows(r.stdout, "order:42 ", 4); len(got) != 2 || got[0] != "order:42 mutex holder "+sh.orderHolder {
		t.Errorf("inspect's rows %q", got)
	}
	var in inspected
	locktag(t, append(sh.args, "inspect", "-o", "json", "files")...).want(t, exitOK).decode(t, &in)
	if in.Name != "files" || in.Lock == nil || in.Lock.Kind != locker.KindRW || in.Rate != nil || in.Lock.Waiters[0].Owner != sh.filesWriter {
		t.Errorf("inspect -o json files: %+v", in)
	}
	locktag(t, append(sh.args, "inspect", "-o", "json", "api:alice")...).want(t, exitOK).decode(t, &in)
	if in.Lock != nil || in.Rate == nil || in.Rate.Burst != 5 {
		t.Errorf("inspect -o json api:alice: %+v", in)
	}
	r = locktag(t, append(sh.args, "inspect", "api:alice")...).want(t, exitOK)
	if got := rows(r.stdout, "api:alice", 3); !strings.HasPrefix(r.stdout, "RATE KEY") || len(got) != 1 {
		t.Errorf("inspect api:alice:\n%s", r.stdout)
	}
	// A record in full: the whole fingerprint.
	r = locktag(t, append(sh.args, "inspect", sh.record)...).want(t, exitOK)
	if got := rows(r.stdout, sh.record, 7); !strings.HasPrefix(r.stdout, "IDEMPOTENCY RECORD") || len(got) != 1 ||
		!strings.HasPrefix(got[0], sh.record+" in flight "+sh.recordFP+" "+sh.recordOwner+" ") || !strings.HasSuffix(got[0], " 1") {
		t.Errorf("inspect %s:\n%s", sh.record, r.stdout)
	}
	in = inspected{}
	locktag(t, append(sh.args, "inspect", "-o", "json", sh.done)...).want(t, exitOK).decode(t, &in)
	if x := in.Record; in.Lock != nil || in.Rate != nil || x == nil || x.Name != sh.done || x.State != locker.IdempotencyDone ||
		x.Fingerprint != sh.doneFP || x.Owner != "" || x.ExpiresInMs <= 0 || x.Waiting != 0 {
		t.Errorf("inspect -o json %s: %+v %+v", sh.done, in, in.Record)
	}
	r = locktag(t, append(sh.args, "inspect", "order:43")...).want(t, exitNotFound)
	if r.stdout != "" || r.stderr != "locktag inspect order:43: nothing held or waited for, no rate key and no idempotency record, under the prefix \"locktag:\"\n" {
		t.Errorf("inspect of nothing: %q %q", r.stdout, r.stderr)
	}
	in = inspected{}
	locktag(t, append(sh.args, "inspect", "order:43", "-o", "json")...).want(t, exitNotFound).decode(t, &in)
	if in.Name != "order:43" || in.Lock != nil || in.Rate != nil || in.Record != nil {
		t.Errorf("inspect -o json of nothing: %+v", in)
	}
}

// recordName knows IdempotencyName's names and nothing else.
func TestRecordName(t *testing.T) {
	name := locker.IdempotencyName("POST /payments", "alice", "k1")
	for _, tc := range []struct {
		name string
		want bool
	}{
		{name, true}, {locker.IdempotencyName("", "", ""), true}, {"order:42", false}, {"idem:", false},
		{name[:len(name)-1], false}, {name + "x", false}, {name[:len(name)-1] + "=", false}, {"xdem:" + name[5:], false},
	} {
		if got := recordName(tc.name); got != tc.want {
			t.Errorf("recordName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// sorted is names in order.
func sorted(names ...string) []string {
	slices.Sort(names)
	return names
}

// globMatch is a whole-name glob: '*' any run, '?' one character.
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"*c", "abc", true}, {"*b*", "abc", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"order:*:pay", "order:42:pay", true}, {"order:*:pay", "order:42:paid", false},
		{"*a*a*a", "aaaa", true}, {"*a*a*a", "aab", false}, {"?", "é", true}, {"", "", true}, {"", "a", false},
		{"a**b", "ab", true}, {"a/*", "a/b/c", true},
	} {
		if got := globMatch(tc.glob, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.glob, tc.name, got, tc.want)
		}
	}
	if p := parsePattern("order:*:pay"); p.prefix != "order:" || !p.Match("order:1:pay") || p.Match("order:1:payx") {
		t.Errorf("parsePattern: %+v", p)
	}
	if p := parsePattern("order:"); p.glob != "" || !p.Match("order:1") || p.Match("orde") {
		t.Errorf("parsePattern: %+v", p)
	}
}
