package tally

import (
	"errors"
	"testing"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// TestErrorMatches: an undecided tally's error names the operation, the
// count and each failed master, and matches ErrQuorum and ErrUnavailable;
// ErrProtocol too exactly when the protocol refusals alone deny the
// quorum.
func TestErrorMatches(t *testing.T) {
	refused := &lockerr.Protocol{Found: "9", Supported: "1"}
	down := errors.New("down")
	for _, c := range []struct {
		name     string
		res      []Reply
		protocol bool
		text     string
	}{
		{"failed", []Reply{{V: int64(1)}, {Err: down}, {Err: down}}, false,
			"locker: quorum not reached: obtain: 1 of 3 masters (need 2); master 1: down; master 2: down"},
		{"refused by a majority", []Reply{{Err: refused}, {V: int64(1)}, {Err: refused}}, true,
			"locker: quorum not reached: obtain: 1 of 3 masters (need 2); master 0: " + refused.Error() + "; master 2: " + refused.Error()},
		{"refused by one, one failed", []Reply{{Err: refused}, {V: int64(1)}, {Err: down}}, false,
			"locker: quorum not reached: obtain: 1 of 3 masters (need 2); master 0: " + refused.Error() + "; master 2: down"},
	} {
		tl := Count("obtain", 2, c.res, func(_ int, v any) (bool, error) { return v == int64(1), nil })
		if !tl.Broken() {
			t.Fatalf("%s: not broken: %+v", c.name, tl)
		}
		err := tl.Err()
		var te *Error
		if !errors.As(err, &te) || te.Op != "obtain" || te.Need != 2 || te.OK != 1 || len(te.Errs) != 3 {
			t.Fatalf("%s: %#v", c.name, err)
		}
		if err.Error() != c.text {
			t.Errorf("%s: message\n %q\nwant\n %q", c.name, err, c.text)
		}
		if !errors.Is(err, lockerr.ErrQuorum) || !errors.Is(err, lockerr.ErrUnavailable) || errors.Is(err, lockerr.ErrProtocol) != c.protocol {
			t.Errorf("%s: %v matches ErrProtocol %v, want %v (and always ErrQuorum, ErrUnavailable)", c.name, err, errors.Is(err, lockerr.ErrProtocol), c.protocol)
		}
	}
}
