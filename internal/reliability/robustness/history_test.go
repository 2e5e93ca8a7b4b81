package robustness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/locktag/locktag/internal/reliability/faults"
)

// record is one operation of a history as the parent collects it.
type record struct {
	client    int
	in        input
	out       output
	call, ret int64
	pending   bool // no return seen (its process was killed or never answered)
}

// history collects the operations of every worker process of one run.
type history struct {
	mu      sync.Mutex
	ops     []*record
	pending map[[2]int64]*record // (process, op id) -> call without return
	holders map[int]holding      // process -> lock it holds
	errs    map[string]int       // error texts of failed operations, counted
}

func newHistory() *history {
	return &history{pending: map[[2]int64]*record{}, holders: map[int]holding{}, errs: map[string]int{}}
}

// holding is a lock a process holds: its key and when its acquisition
// was called.
type holding struct {
	key string
	at  int64
}

// worker is one worker process.
type worker struct {
	id      int // process number within the run
	role    string
	child   *faults.Child
	env     workerEnv
	pins    chan string   // replies to "pin"
	ready   chan struct{} // closed on "ready" or "refused"
	refused string        // Check's refusal, if any (set before ready closes)
	gone    chan struct{} // closed when its output ended (it exited)
	dead    bool          // killed by the nemesis (set by the test goroutine)
}

// consume reads w's output into h until it ends.
func (h *history) consume(w *worker) {
	defer close(w.gone)
	readyClosed := false
	markReady := func() {
		if !readyClosed {
			readyClosed = true
			close(w.ready)
		}
	}
	defer markReady()
	for line := range w.child.Lines() {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			continue // not ours (the test framework's own lines)
		}
		switch e.E {
		case "ready":
			markReady()
		case "refused":
			w.refused = e.Err
			markReady()
		case "pin":
			select {
			case w.pins <- e.Key:
			default:
			}
		case "c":
			h.mu.Lock()
			h.pending[[2]int64{int64(w.id), e.ID}] = &record{client: e.Client, in: input{Op: e.Op, Key: e.Key, Tok: e.Tok, Val: e.Val}, call: e.T}
			h.mu.Unlock()
		case "r":
			h.mu.Lock()
			k := [2]int64{int64(w.id), e.ID}
			if r := h.pending[k]; r != nil {
				delete(h.pending, k)
				r.out = output{Out: e.Out, Tok: e.Tok, Val: e.Val, Done: e.Done, Valid: e.Valid}
				r.ret = e.T
				h.ops = append(h.ops, r)
				switch {
				case r.in.Op == "acquire" && e.Out == "ok":
					h.holders[w.id] = holding{key: r.in.Key, at: r.call}
				case r.in.Op == "release":
					delete(h.holders, w.id)
				}
				if e.Err != "" {
					h.errs[r.in.Op+" "+e.Out+": "+shorten(e.Err)]++
				}
			}
			h.mu.Unlock()
		}
	}
}

func shorten(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	for _, cut := range []string{"127.0.0.1:"} {
		if i := strings.Index(s, cut); i >= 0 {
			s = s[:i] + "…"
		}
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// orphan turns the calls of process id without a return into operations
// of unknown outcome (it was killed, or the run ended before it answered).
func (h *history) orphan(id int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, r := range h.pending {
		if k[0] != int64(id) {
			continue
		}
		delete(h.pending, k)
		r.pending, r.ret, r.out = true, never, output{Out: "unknown"}
		h.ops = append(h.ops, r)
	}
	delete(h.holders, id)
}

// holding returns the processes that hold a lock now, as their recorded
// operations say.
func (h *history) holding() map[int]holding {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[int]holding, len(h.holders))
	for k, v := range h.holders {
		out[k] = v
	}
	return out
}

// takenOver reports whether a process other than id was granted key by
// an acquisition called after since.
func (h *history) takenOver(id int, key string, since int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w, hd := range h.holders {
		if w != id && hd.key == key {
			for i := len(h.ops) - 1; i >= 0 && i >= len(h.ops)-5000; i-- {
				r := h.ops[i]
				if r.in.Op == "acquire" && r.in.Key == key && r.out.Out == "ok" && r.call > since {
					return true
				}
			}
		}
	}
	return false
}

// operations returns the history of one model ("lock", "lease", "once" or "rate") for
// porcupine. Acquisitions that did not grant a token and releases whose
// outcome is unknown are left out: they change nothing the models track.
func (h *history) operations(model string) []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []porcupine.Operation
	for _, r := range h.ops {
		switch r.in.Op {
		case "acquire":
			if model != "lock" && model != "lease" || r.out.Out != "ok" {
				continue
			}
		case "release":
			if model != "lock" && model != "lease" || r.out.Out != "ok" && r.out.Out != "notheld" {
				continue
			}
		case "read", "write":
			if model != "lock" && model != "lease" {
				continue
			}
			if r.out.Out == "fail" {
				continue
			}
		case "request":
			if model != "once" {
				continue
			}
		case "allow":
			if model != "rate" || r.out.Out == "fail" {
				continue
			}
		}
		in, out1, ret := r.in, r.out, r.ret
		if in.Op == "allow" {
			if out1.Out == "unknown" {
				// A call given up on may still run later (a paused
				// server runs what was queued when it resumes).
				ret = never
			}
			in.At, out1.By = r.call, ret
		}
		out = append(out, porcupine.Operation{ClientId: r.client, Input: in, Output: out1, Call: r.call, Return: ret})
	}
	return out
}

// stats counts a history's operations.
type stats struct {
	ops, unknown, refusedByFence, acquired, executed, replayed int
	admitted, limited                                          int
}

func (h *history) stats() stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	var s stats
	for _, r := range h.ops {
		s.ops++
		switch {
		case r.out.Out == "unknown":
			s.unknown++
		case r.out.Out == "stale":
			s.refusedByFence++
		case r.in.Op == "acquire" && r.out.Out == "ok":
			s.acquired++
		case r.out.Out == "exec":
			s.executed++
		case r.out.Out == "replay":
			s.replayed++
		case r.in.Op == "allow" && r.out.Out == "ok":
			s.admitted++
		case r.out.Out == "limited":
			s.limited++
		}
	}
	return s
}

// verdict is the result of checking one model's history.
type verdict struct {
	model      string
	ops        int
	partitions int
	result     porcupine.CheckResult
	file       string // the visualisation of an illegal history
}

// checkTimeout bounds porcupine's search per model and run; a history it
// cannot decide in time is reported as unknown, never as legal.
const checkTimeout = 3 * time.Minute

// check checks the history against model and, when it is illegal and save
// is set, writes porcupine's visualisation to dir/name-model.html.
func (h *history) check(model string, save bool, dir, name string) verdict {
	ops := h.operations(model)
	m := map[string]porcupine.NondeterministicModel{"lock": lockModel, "lease": leaseModel, "once": onceModel, "rate": rateModel}[model]
	pm := m.ToModel()
	v := verdict{model: model, ops: len(ops), partitions: len(partitionByKey(ops))}
	if len(ops) == 0 {
		v.result = porcupine.Ok
		return v
	}
	v.result = porcupine.CheckOperationsTimeout(pm, ops, checkTimeout)
	if v.result != porcupine.Illegal || !save {
		return v
	}
	res, info := porcupine.CheckOperationsVerbose(pm, ops, checkTimeout)
	if res != porcupine.Illegal {
		return v
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		v.file = filepath.Join(dir, name+"-"+model+".html")
		if err := porcupine.VisualizePath(pm, info, v.file); err != nil {
			v.file = fmt.Sprintf("(visualisation failed: %v)", err)
		}
	}
	return v
}

// outDir is where illegal histories are saved: LOCKTAG_ROBUSTNESS_OUT, or
// locktag-robustness under the system's temporary directory (a test's
// TempDir is deleted when it ends).
func outDir() string {
	if d := os.Getenv("LOCKTAG_ROBUSTNESS_OUT"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "locktag-robustness")
}

// errorSummary lists the most frequent error texts, for the log.
func (h *history) errorSummary(n int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range h.errs {
		all = append(all, kv{k, v})
	}
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].v > all[j-1].v; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	var b strings.Builder
	for i, e := range all {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "\n    %5d× %s", e.v, e.k)
	}
	return b.String()
}
