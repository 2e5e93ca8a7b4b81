package robustness

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// input and output are an operation's, in both models.
type input struct {
	Op  string // acquire, release, read, write; request; allow
	Key string // the lock key, the idempotency request key, or the rate key
	Tok int64  // the fencing token the operation carries (release, read, write)
	Val int64  // the value a write writes
	At  int64  // allow: the call time (the rate model reads the clock)
}

type output struct {
	Out  string // ok, stale, unclaimed, notheld, unknown; replay, exec, refused, unknown
	Tok  int64  // acquire: the token granted
	Val  int64  // read: the value read; request: the execution count n
	Done string // exec: whether the outcome was stored: yes, no, unknown
	// Valid (read, write): the holder's lease was still valid after the
	// operation returned.
	Valid bool
	By    int64 // allow: the return time (never: unknown)
}

// never is the return time of an operation whose outcome is unknown: it
// may take effect at any time after its call, or never.
const never = math.MaxInt64

// lockState is the model of a lock with a fenced register: last is the
// largest fencing token granted, holder the token of the holder as far as
// releases are concerned (0: none), fence the largest token that claimed
// the register and value its value.
type lockState struct {
	last, holder, fence, value int64
}

// lockModel is a lock and a fenced register, per lock key (see
// newLockModel); leaseModel adds mutual exclusion while a lease is valid.
var (
	lockModel  = newLockModel(false)
	leaseModel = newLockModel(true)
)

// newLockModel is a lock and a fenced register, per lock key:
//   - an acquisition's token is larger than every token granted before;
//   - a release succeeds only for the holder;
//   - a read with a token at least the register's fence claims the
//     register and returns its value; with a smaller token it is refused;
//   - a write succeeds only with the token that claimed the register
//     last; with a smaller one it is refused.
//
// A stale holder therefore shows as a refused read or write; a register
// that lets one through (unfenced), a lock whose tokens go back, or a
// release of another holder's lock makes the history illegal. Operations
// with an unknown outcome may or may not have taken effect.
//
// With exclusive, a refusal is legal only if the holder's lease had ended
// by the time the operation returned: a register that saw a newer token
// while the older holder's lease was still valid means the lock was
// granted twice at once.
func newLockModel(exclusive bool) porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Partition: partitionByKey,
		Init:      func() []any { return []any{lockState{}} },
		Step: func(st, in, out any) []any {
			s, i, o := st.(lockState), in.(input), out.(output)
			switch i.Op {
			case "acquire":
				if o.Out == "ok" && o.Tok > s.last {
					s.last, s.holder = o.Tok, o.Tok
					return []any{s}
				}
			case "release":
				switch {
				case o.Out == "notheld":
					return []any{s}
				case o.Out == "ok" && s.holder == i.Tok:
					s.holder = 0
					return []any{s}
				}
			case "read":
				claimed := s
				claimed.fence = i.Tok
				switch {
				case o.Out == "ok" && i.Tok >= s.fence && o.Val == s.value:
					return []any{claimed}
				case o.Out == "stale" && i.Tok < s.fence && !(exclusive && o.Valid):
					return []any{s}
				case o.Out == "unknown" && i.Tok >= s.fence:
					return []any{s, claimed}
				case o.Out == "unknown":
					return []any{s}
				}
			case "write":
				written := s
				written.value = i.Val
				switch {
				case o.Out == "ok" && i.Tok == s.fence:
					return []any{written}
				case o.Out == "stale" && i.Tok < s.fence && !(exclusive && o.Valid), o.Out == "unclaimed" && i.Tok > s.fence:
					return []any{s}
				case o.Out == "unknown" && i.Tok == s.fence:
					return []any{s, written}
				case o.Out == "unknown":
					return []any{s}
				}
			}
			return nil
		},
		DescribeOperation: describe,
		DescribeState: func(st any) string {
			s := st.(lockState)
			return fmt.Sprintf("token %d, holder %d, fence %d, value %#x", s.last, s.holder, s.fence, s.value)
		},
	}
}

// onceState is the model of one idempotency key: execs is how many
// executions counted themselves, result the outcome stored (0: none).
type onceState struct {
	execs, result int64
}

// onceModel is exactly-once execution, per idempotency key:
//   - an execution is the next one counted (its n is one more than the
//     executions before it) and happens only while no outcome is stored;
//   - a completed execution stores its n; a replay returns the stored n;
//   - a refused request changes nothing.
//
// An execution whose claim was lost before it completed is allowed (the
// next request with the key executes again: docs/idempotency.md); a second
// execution after an outcome was stored, two stored outcomes, or a replay
// of another outcome make the history illegal.
var onceModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []any { return []any{onceState{}} },
	Step: func(st, in, out any) []any {
		s, o := st.(onceState), out.(output)
		switch o.Out {
		case "refused":
			return []any{s}
		case "replay":
			if o.Val != 0 && o.Val == s.result {
				return []any{s}
			}
		case "exec":
			if s.result != 0 || o.Val != s.execs+1 {
				return nil
			}
			ran, done := onceState{execs: o.Val}, onceState{execs: o.Val, result: o.Val}
			switch o.Done {
			case "yes":
				return []any{done}
			case "no":
				return []any{ran}
			default:
				return []any{ran, done}
			}
		case "unknown":
			if s.result != 0 {
				return []any{s}
			}
			return []any{s, onceState{execs: s.execs + 1}, onceState{execs: s.execs + 1, result: s.execs + 1}}
		}
		return nil
	},
	DescribeOperation: describe,
	DescribeState: func(st any) string {
		s := st.(onceState)
		return fmt.Sprintf("executions %d, stored %d", s.execs, s.result)
	},
}

// The rate limit the workers' Allow calls keep on each rate key, and the
// clock error the rate model tolerates: the server decides by its TIME,
// the workers time operations by the wall clock anchored once plus their
// monotonic clocks.
const (
	rateLimit  = 20
	ratePeriod = time.Second
	rateBurst  = 3
	rateIV     = int64(ratePeriod / rateLimit)
	rateCap    = rateBurst * rateIV
	rateSlack  = int64(time.Millisecond)
)

// rateState is the model of one rate key, in the suite's clock
// (nanoseconds): the theoretical arrival time (when the bucket's debt is
// paid off) lies in [tatLo, tatHi], and lo is the earliest instant the
// next decision can have happened (decisions happen in order). With
// open, the last decision was an admission whose instant has no bound
// yet (an unknown outcome: it may take effect after its caller gave up):
// tatHi is then the bound before it, and the next decision bounds it.
type rateState struct {
	tatLo, tatHi, lo int64
	open             bool
}

// far bounds the model's times (an unknown outcome returns never).
const far = math.MaxInt64 / 4

// rateModel is GCRA, per rate key. Each decision happens at some instant t
// between its call and its return, after the decisions before it; it
// admits when the debt it would leave, max(tat-t, 0) plus one interval,
// is at most the burst's worth (t ≥ tat + interval - burst·interval), and
// then adds the interval; otherwise it refuses and changes nothing. The
// instant is not observed, so the model keeps the range of theoretical
// arrival times the placements allow: an admission needs the earliest
// one, a refusal the latest. Too many admissions in a span, or a refusal
// while the bucket surely had room, make a history illegal; an unknown
// outcome may have admitted at any time after its call, or done nothing.
// The range is wider than the exact set of states, so the model can miss
// a violation hidden in the operations' latency, never invent one.
var rateModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init: func() []any {
		const past = -far
		return []any{rateState{tatLo: past, tatHi: past, lo: past}}
	},
	Step: func(st, in, out any) []any {
		s, i, o := st.(rateState), in.(input), out.(output)
		by := min(o.By, far)
		if s.open { // the open admission happened before this decision: by by
			s.tatHi, s.open = max(s.tatHi, by)+rateIV, false
		}
		lo := max(i.At, s.lo)
		if lo > by {
			return nil
		}
		first := max(lo, s.tatLo+rateIV-rateCap-rateSlack) // the earliest instant it may conform
		// Placed as late as its return allows.
		admitted := rateState{tatLo: max(s.tatLo, first) + rateIV, tatHi: max(s.tatHi, by) + rateIV, lo: first}
		switch o.Out {
		case "ok":
			if first <= by {
				return []any{admitted}
			}
		case "limited":
			if lo < s.tatHi+rateIV-rateCap+rateSlack {
				// A refusal at t says tat > t + burst·interval - interval.
				return []any{rateState{tatLo: max(s.tatLo, lo+rateCap-rateIV-rateSlack), tatHi: s.tatHi, lo: lo}}
			}
		case "unknown":
			admitted.tatHi, admitted.open = s.tatHi, true
			return []any{s, admitted}
		}
		return nil
	},
	DescribeOperation: describe,
	DescribeState: func(st any) string {
		s := st.(rateState)
		open := ""
		if s.open {
			open = " (and an admission not yet placed)"
		}
		return fmt.Sprintf("paid off in [%v, %v]%s, next decision from %v", time.Duration(s.tatLo), time.Duration(s.tatHi), open, time.Duration(s.lo))
	},
}

func describe(in, out any) string {
	i, o := in.(input), out.(output)
	switch i.Op {
	case "acquire":
		return fmt.Sprintf("acquire %s -> %s %d", i.Key, o.Out, o.Tok)
	case "release":
		return fmt.Sprintf("release %s %d -> %s", i.Key, i.Tok, o.Out)
	case "read":
		return fmt.Sprintf("read %s %d -> %s %#x%s", i.Key, i.Tok, o.Out, o.Val, validity(o))
	case "write":
		return fmt.Sprintf("write %s %d %#x -> %s%s", i.Key, i.Tok, i.Val, o.Out, validity(o))
	case "allow":
		by := "never"
		if o.By != never {
			by = time.Duration(o.By).String()
		}
		return fmt.Sprintf("allow %s [%v, %s] -> %s", i.Key, time.Duration(i.At), by, o.Out)
	}
	return fmt.Sprintf("request %s -> %s %d %s", i.Key, o.Out, o.Val, o.Done)
}

func validity(o output) string {
	if o.Valid {
		return " (lease valid)"
	}
	return ""
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(input).Key
		by[k] = append(by[k], op)
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, by[k])
	}
	return out
}

// TestModels checks the models on small histories, legal and illegal, so
// that a model that accepts everything (or nothing) cannot pass unseen.
func TestModels(t *testing.T) {
	type op struct {
		cl        int
		in        input
		out       output
		call, ret int64
	}
	acq := func(cl int, tok, call, ret int64) op {
		return op{cl, input{Op: "acquire", Key: "k"}, output{Out: "ok", Tok: tok}, call, ret}
	}
	rd := func(cl int, tok int64, out string, v, call, ret int64) op {
		return op{cl, input{Op: "read", Key: "k", Tok: tok}, output{Out: out, Val: v}, call, ret}
	}
	wr := func(cl int, tok int64, out string, v, call, ret int64) op {
		return op{cl, input{Op: "write", Key: "k", Tok: tok, Val: v}, output{Out: out}, call, ret}
	}
	staleValid := func(cl int, tok int64, call, ret int64) op {
		return op{cl, input{Op: "write", Key: "k", Tok: tok, Val: 1}, output{Out: "stale", Valid: true}, call, ret}
	}
	rel := func(cl int, tok int64, out string, call, ret int64) op {
		return op{cl, input{Op: "release", Key: "k", Tok: tok}, output{Out: out}, call, ret}
	}
	req := func(cl int, out string, n int64, done string, call, ret int64) op {
		return op{cl, input{Op: "request", Key: "r"}, output{Out: out, Val: n, Done: done}, call, ret}
	}
	ms := int64(time.Millisecond)
	allow := func(cl int, out string, call, ret int64) op {
		return op{cl, input{Op: "allow", Key: "q", At: call * ms}, output{Out: out, By: ret * ms}, call * ms, ret * ms}
	}
	unknownAllow := func(cl int, call int64) op {
		return op{cl, input{Op: "allow", Key: "q", At: call * ms}, output{Out: "unknown", By: never}, call * ms, never}
	}
	for _, tc := range []struct {
		name  string
		model porcupine.NondeterministicModel
		ops   []op
		legal bool
	}{
		{"holder-then-next", lockModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3), wr(0, 10, "ok", 7, 4, 5), rel(0, 10, "ok", 6, 7),
			acq(1, 11, 8, 9), rd(1, 11, "ok", 7, 10, 11)}, true},
		{"stale-holder-refused", lockModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3),
			acq(1, 11, 4, 5), rd(1, 11, "ok", 0, 6, 7), wr(1, 11, "ok", 9, 8, 9),
			wr(0, 10, "stale", 8, 10, 11), rel(0, 10, "notheld", 12, 13)}, true},
		{"stale-write-applied", lockModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3),
			acq(1, 11, 4, 5), rd(1, 11, "ok", 0, 6, 7), wr(0, 10, "ok", 8, 10, 11)}, false},
		{"stale-read-answered", lockModel, []op{acq(0, 10, 0, 1), acq(1, 11, 4, 5), rd(1, 11, "ok", 0, 6, 7), rd(0, 10, "ok", 0, 8, 9)}, false},
		{"read-misses-write", lockModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3), wr(0, 10, "ok", 7, 4, 5), rd(0, 10, "ok", 0, 6, 7)}, false},
		{"token-goes-back", lockModel, []op{acq(0, 10, 0, 1), rel(0, 10, "ok", 2, 3), acq(1, 3, 4, 5)}, false},
		{"release-of-another", lockModel, []op{acq(0, 10, 0, 1), acq(1, 11, 2, 3), rel(0, 10, "ok", 4, 5)}, false},
		{"unknown-write-applied", lockModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3), wr(0, 10, "unknown", 5, 4, never),
			acq(1, 11, 6, 7), rd(1, 11, "ok", 5, 8, 9)}, true},
		{"unknown-write-not-applied", lockModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3), wr(0, 10, "unknown", 5, 4, never),
			acq(1, 11, 6, 7), rd(1, 11, "ok", 0, 8, 9)}, true},
		{"refused-after-lease", leaseModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3),
			acq(1, 11, 4, 5), rd(1, 11, "ok", 0, 6, 7), wr(0, 10, "stale", 8, 10, 11)}, true},
		{"refused-in-lease-fenced-only", lockModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3),
			acq(1, 11, 4, 5), rd(1, 11, "ok", 0, 6, 7), staleValid(0, 10, 10, 11)}, true},
		{"refused-in-lease", leaseModel, []op{acq(0, 10, 0, 1), rd(0, 10, "ok", 0, 2, 3),
			acq(1, 11, 4, 5), rd(1, 11, "ok", 0, 6, 7), staleValid(0, 10, 10, 11)}, false},
		{"once", onceModel, []op{req(0, "exec", 1, "yes", 0, 1), req(1, "replay", 1, "", 2, 3), req(0, "refused", 0, "", 4, 5)}, true},
		{"lost-claim-runs-again", onceModel, []op{req(0, "exec", 1, "no", 0, 1), req(1, "exec", 2, "yes", 2, 3), req(0, "replay", 2, "", 4, 5)}, true},
		{"killed-then-again", onceModel, []op{req(0, "unknown", 0, "", 0, never), req(1, "exec", 2, "yes", 2, 3)}, true},
		{"twice", onceModel, []op{req(0, "exec", 1, "yes", 0, 1), req(1, "exec", 2, "yes", 2, 3)}, false},
		{"run-after-stored", onceModel, []op{req(0, "exec", 1, "yes", 0, 1), req(1, "exec", 2, "no", 2, 3)}, false},
		{"replay-of-another", onceModel, []op{req(0, "exec", 1, "yes", 0, 1), req(1, "replay", 2, "", 2, 3)}, false},
		{"uncounted-execution", onceModel, []op{req(0, "exec", 2, "yes", 0, 1)}, false},
		// rateBurst 3, one request per 50ms.
		{"rate-burst-then-refused", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), allow(0, "ok", 2, 3), allow(1, "limited", 3, 4),
			allow(0, "ok", 60, 61), allow(1, "limited", 62, 63)}, true},
		{"rate-steady", rateModel, []op{allow(0, "ok", 0, 1), allow(0, "ok", 50, 51), allow(0, "ok", 100, 101), allow(0, "ok", 150, 151),
			allow(0, "ok", 200, 201), allow(1, "ok", 250, 251)}, true},
		{"rate-one-too-many", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), allow(0, "ok", 2, 3), allow(1, "ok", 3, 4)}, false},
		{"rate-too-many-in-a-span", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), allow(0, "ok", 2, 3),
			allow(0, "ok", 30, 31), allow(1, "ok", 40, 41)}, false},
		{"rate-refused-with-room", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "limited", 2, 3)}, false},
		{"rate-refused-after-quiet", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), allow(0, "ok", 2, 3), allow(1, "limited", 500, 501)}, false},
		{"rate-late-return-placed-late", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), allow(0, "ok", 2, 3), allow(1, "ok", 3, 60)}, true},
		{"rate-unknown-admitted", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), unknownAllow(2, 2), allow(0, "limited", 3, 4),
			allow(1, "limited", 45, 46)}, true},
		{"rate-unknown-runs-late", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), unknownAllow(2, 2), allow(0, "ok", 3, 4),
			allow(1, "limited", 5, 6)}, true},
		{"rate-unknown-bounded-by-next", rateModel, []op{allow(0, "ok", 0, 1), unknownAllow(2, 2), allow(1, "ok", 3, 4),
			allow(0, "limited", 5, 6)}, true},
		{"rate-unknown-then-refused-with-room", rateModel, []op{allow(0, "ok", 0, 1), unknownAllow(2, 2), allow(1, "ok", 300, 301),
			allow(0, "limited", 310, 311)}, false},
		{"rate-unknown-not-admitted", rateModel, []op{allow(0, "ok", 0, 1), allow(1, "ok", 1, 2), unknownAllow(2, 2), allow(0, "ok", 3, 4)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []porcupine.Operation
			for _, o := range tc.ops {
				h = append(h, porcupine.Operation{ClientId: o.cl, Input: o.in, Output: o.out, Call: o.call, Return: o.ret})
			}
			if got := porcupine.CheckOperations(tc.model.ToModel(), h); got != tc.legal {
				t.Fatalf("linearizable: %v, want %v", got, tc.legal)
			}
		})
	}
}
