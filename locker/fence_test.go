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

// TestFenceClaim runs sequences of Claim, Check and Admit on one Fence.
func TestFenceClaim(t *testing.T) {
	type step struct {
		op    string // "claim", "check", "admit", "again"
		res   string
		token int64
		want  error
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"claim then check", []step{
			{"claim", "a", 10, nil},
			{"check", "a", 10, nil},
			{"check", "a", 10, nil}, // Check changes nothing
		}},
		{"claim again with the same token", []step{
			{"claim", "a", 10, nil},
			{"claim", "a", 10, nil},
			{"check", "a", 10, nil},
		}},
		{"a newer claim makes the older token stale", []step{
			{"claim", "a", 10, nil},
			{"claim", "a", 11, nil},
			{"check", "a", 10, locker.ErrStaleToken},
			{"claim", "a", 10, locker.ErrStaleToken},
			{"check", "a", 11, nil},
		}},
		{"check without claim", []step{
			{"check", "a", 10, locker.ErrNotClaimed},
			{"claim", "a", 9, nil},
			{"check", "a", 10, locker.ErrNotClaimed}, // 10 is newer, but it never claimed
		}},
		{"resources are independent", []step{
			{"claim", "a", 10, nil},
			{"claim", "b", 5, nil},
			{"check", "b", 5, nil},
			{"check", "a", 5, locker.ErrStaleToken},
		}},
		{"admit and claim share one fence", []step{
			{"admit", "a", 10, nil},
			{"claim", "a", 9, locker.ErrStaleToken},
			{"claim", "a", 11, nil},
			{"admit", "a", 11, locker.ErrStaleToken}, // after a claim, Check, not Admit
			{"again", "a", 11, nil},
			{"admit", "a", 12, nil},
			{"check", "a", 11, locker.ErrStaleToken},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f locker.Fence
			for i, s := range tt.steps {
				var err error
				switch s.op {
				case "claim":
					err = f.Claim(s.res, s.token)
				case "check":
					err = f.Check(s.res, s.token)
				case "admit":
					err = f.Admit(s.res, s.token)
				case "again":
					err = f.AdmitAgain(s.res, s.token)
				}
				if !errors.Is(err, s.want) || (err == nil) != (s.want == nil) {
					t.Fatalf("step %d %s(%s, %d): %v, want %v", i, s.op, s.res, s.token, err, s.want)
				}
			}
		})
	}
}

// rmwStore is a row of stock as a database holds it, with one of the
// fencing recipes for its read and its write. Each method is one atomic
// storage step (one statement).
type rmwStore struct {
	qty   int64
	fence locker.Fence
	read  func(f *locker.Fence, resource string, token int64) error // before the read
	write func(f *locker.Fence, resource string, token int64) error // with the write
}

func (s *rmwStore) Read(token int64) (int64, error) {
	if err := s.read(&s.fence, "row", token); err != nil {
		return 0, err
	}
	return s.qty, nil
}

func (s *rmwStore) Write(token, qty int64) error {
	if err := s.write(&s.fence, "row", token); err != nil {
		return err
	}
	s.qty = qty
	return nil
}

// TestReadModifyWritePausedHolder is the paused read-modify-write timeline, step by step:
// holder A (token 10) reads qty 5 and is paused past its lease; B (token 11)
// takes the lock and reads qty 5; A resumes and writes 4; B writes 4.
// Write-only fencing (Admit) admits both writes and loses a sale; claiming
// before the read refuses A's write.
func TestReadModifyWritePausedHolder(t *testing.T) {
	const a, b = 10, 11
	none := func(*locker.Fence, string, int64) error { return nil }
	tests := []struct {
		name        string
		read, write func(f *locker.Fence, resource string, token int64) error
		aWrite      error // A's write, after B's read
		lost        bool  // the final qty does not count every acknowledged sale
	}{
		{"write-only Admit", none, (*locker.Fence).Admit, nil, true},
		{"write-only AdmitAgain", none, (*locker.Fence).AdmitAgain, nil, true},
		{"Claim before the read, Check with the write", (*locker.Fence).Claim, (*locker.Fence).Check, locker.ErrStaleToken, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &rmwStore{qty: 5, read: tt.read, write: tt.write}
			// The previous holder, token 9, set the row up.
			if err := s.read(&s.fence, "row", 9); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(9, 5); err != nil {
				t.Fatal(err)
			}
			sold := 0
			qa, err := s.Read(a) // A reads, then is paused
			if err != nil {
				t.Fatalf("A's read: %v", err)
			}
			qb, err := s.Read(b) // B holds the lock now, and reads the same qty
			if err != nil {
				t.Fatalf("B's read: %v", err)
			}
			err = s.Write(a, qa-1) // A resumes
			if !errors.Is(err, tt.aWrite) || (err == nil) != (tt.aWrite == nil) {
				t.Fatalf("A's write: %v, want %v", err, tt.aWrite)
			}
			if err == nil {
				sold++
			}
			if err := s.Write(b, qb-1); err != nil {
				t.Fatalf("B's write: %v", err)
			}
			sold++
			if lost := s.qty != 5-int64(sold); lost != tt.lost {
				t.Fatalf("qty %d after %d acknowledged sales from 5: lost=%v, want %v", s.qty, sold, lost, tt.lost)
			}
		})
	}
}

// The same timeline on a Fenced value: A's Store is refused.
func TestFencedPausedHolder(t *testing.T) {
	stock := locker.NewFenced[int64](5)
	qa, errA := stock.Load(10)
	qb, errB := stock.Load(11)
	if errA != nil || errB != nil || qa != 5 || qb != 5 {
		t.Fatalf("loads: %d %v, %d %v", qa, errA, qb, errB)
	}
	if err := stock.Store(10, qa-1); !errors.Is(err, locker.ErrStaleToken) {
		t.Fatalf("A's store: %v, want ErrStaleToken", err)
	}
	if err := stock.Store(11, qb-1); err != nil {
		t.Fatalf("B's store: %v", err)
	}
	if _, err := stock.Update(10, func(q int64) (int64, error) { return q - 1, nil }); !errors.Is(err, locker.ErrStaleToken) {
		t.Fatalf("A's update: %v, want ErrStaleToken", err)
	}
	if q, _ := stock.Load(11); q != 4 {
		t.Fatalf("qty %d, want 4", q)
	}
}
