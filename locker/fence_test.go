package locker_test

import (
	"errors"
	"testing"

	"github.com/locktag/locktag/locker"
)

func TestFence(t *testing.T) {
	var f locker.Fence
	steps := []struct {
		res   string
		token int64
		again bool
		stale bool
	}{
		{"a", 5, false, false},
		{"a", 5, false, true}, // the same token twice is a replay
		{"a", 5, true, false}, // unless the holder says it writes again
		{"a", 4, true, true},  // an older holder
		{"b", 1, false, false},
		{"a", 6, false, false},
	}
	for i, s := range steps {
		var err error
		if s.again {
			err = f.AdmitAgain(s.res, s.token)
		} else {
			err = f.Admit(s.res, s.token)
		}
		if got := errors.Is(err, locker.ErrStaleToken); got != s.stale {
			t.Fatalf("step %d (%s, %d): err %v, want stale=%v", i, s.res, s.token, err, s.stale)
		}
	}
}
