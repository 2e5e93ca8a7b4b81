package protocol

import (
	"slices"
	"testing"
)

// TestKindNames: a semaphore's and a read/write lock's names, built as
// slices of one string, are the documented keys (docs/locking.md), with
// acquire's extra argument, and every holder gets its own token.
func TestKindNames(t *testing.T) {
	for _, prefix := range []string{"locktag:", "", "app:x:"} {
		lay := &KeyLayout{Prefix: prefix}
		for _, tc := range []struct {
			suffix string
			holder func() (Names, string)
			arg    any // acquire's extra argument: the limit, the kind
		}{
			{":s", func() (Names, string) { return lay.Semaphore("tenant:7", 3, new(Buf)) }, int64(3)},
			{":rw", func() (Names, string) { return lay.RW("tenant:7", true, new(Buf)) }, "w"},
			{":rw", func() (Names, string) { return lay.RW("tenant:7", false, nil) }, "r"},
		} {
			n, token := tc.holder()
			base := prefix + "{tenant:7}" + tc.suffix
			want := []string{base, base + ":q", base + ":w"}
			if got := n.Keys.Names(); !slices.Equal(got, want) {
				t.Errorf("prefix %q %s: keys %q, want %q", prefix, tc.suffix, got, want)
			}
			if n.Channel != base+":c" {
				t.Errorf("prefix %q %s: channel %q, want %q", prefix, tc.suffix, n.Channel, base+":c")
			}
			if len(token) != tokenLen || n.TokenArg != any(token) {
				t.Errorf("prefix %q %s: token %q (arg %v), want %d characters", prefix, tc.suffix, token, n.TokenArg, tokenLen)
			}
			if _, other := tc.holder(); other == token {
				t.Errorf("prefix %q %s: two holders share token %q", prefix, tc.suffix, token)
			}
			if n.ExtraArg != tc.arg {
				t.Errorf("prefix %q %s: acquire's argument %v, want %v", prefix, tc.suffix, n.ExtraArg, tc.arg)
			}
		}
	}
}

// TestMutexLastKey: a Redlock Locker's mutex names carry the last token's
// key, prefix{key}:f; a semaphore's never do.
func TestMutexLastKey(t *testing.T) {
	lay := &KeyLayout{Prefix: "p:", LastKey: true, WindowArg: int64(250), SIDArg: "sid"}
	n, token := lay.Mutex("k", nil)
	if got, want := n.Keys.Names(), []string{"p:{k}", "p:{k}:q", "p:{k}:w", "p:{k}:f"}; !slices.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
	if want := []any{token, HandoffGrant, int64(250), "sid"}; !slices.Equal(n.ReleaseArgs, want) {
		t.Errorf("release arguments %v, want %v", n.ReleaseArgs, want)
	}
	if s, _ := lay.Semaphore("k", 2, nil); len(s.Keys.Names()) != 3 {
		t.Errorf("semaphore keys %q, want three", s.Keys.Names())
	}
}
