package locker

import (
	"slices"
	"testing"
)

// TestKindHolderNames: a semaphore's and a read/write lock's names, built
// as slices of one string, are the documented keys (docs/locking.md), with
// acquire's extra argument, and every holder gets its own token.
func TestKindHolderNames(t *testing.T) {
	for _, prefix := range []string{"locktag:", "", "app:x:"} {
		l := &Locker{shared: shared{o: &options{prefix: prefix}}}
		for _, tc := range []struct {
			suffix string
			holder func() (names, string)
			arg    any // acquire's extra argument: the limit, the kind
		}{
			{":s", func() (names, string) { return l.semHolder("tenant:7", 3, new(holderBuf)) }, int64(3)},
			{":rw", func() (names, string) { return l.rwHolder("tenant:7", Write, new(holderBuf)) }, "w"},
			{":rw", func() (names, string) { return l.rwHolder("tenant:7", Read, new(holderBuf)) }, "r"},
		} {
			n, token := tc.holder()
			base := prefix + "{tenant:7}" + tc.suffix
			want := []string{base, base + ":q", base + ":w"}
			if got := n.keys.Names(); !slices.Equal(got, want) {
				t.Errorf("prefix %q %s: keys %q, want %q", prefix, tc.suffix, got, want)
			}
			if n.channel != base+":c" {
				t.Errorf("prefix %q %s: channel %q, want %q", prefix, tc.suffix, n.channel, base+":c")
			}
			if len(token) != tokenLen || n.tokenArg != any(token) {
				t.Errorf("prefix %q %s: token %q (arg %v), want %d characters", prefix, tc.suffix, token, n.tokenArg, tokenLen)
			}
			if _, other := tc.holder(); other == token {
				t.Errorf("prefix %q %s: two holders share token %q", prefix, tc.suffix, token)
			}
			if n.limitArg != tc.arg {
				t.Errorf("prefix %q %s: acquire's argument %v, want %v", prefix, tc.suffix, n.limitArg, tc.arg)
			}
		}
	}
}
