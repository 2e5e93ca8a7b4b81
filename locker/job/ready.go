package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/locktag/locktag/locker"
)

// ReadyHandler returns a readiness endpoint that answers 200 while el
// leads and 503 otherwise, with a JSON body: status "leader", "follower"
// (another process leads, or none does) or "lost" (this process's last
// term was lost, not resigned; reason says why), and token, the fencing
// token of the term it is about. Each answer asks el at the moment of the
// request (Elector.Term), so it turns to 503 the instant el considers
// leadership lost; only a follower makes a Redis call, a read-only look-up
// of the leader bounded by WithReadyLookup. The error wraps
// locker.ErrBadOption, naming each mistake, when el is nil or an option is
// invalid. See docs/operations.md#leader-aware-readiness.
func ReadyHandler(el *Elector, opts ...ReadyOption) (http.Handler, error) {
	o, errs := evaluateReadyOptions(opts)
	if el == nil {
		errs = append(errs, fmt.Errorf("%w: job: nil Elector", locker.ErrBadOption))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &readyHandler{el: el, lookup: o.lookup}, nil
}

type readyHandler struct {
	el     *Elector
	lookup time.Duration // 0: no look-up
}

// readyBody is ReadyHandler's answer.
type readyBody struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Leader string `json:"leader,omitempty"`
	Token  int64  `json:"token,omitempty"`
}

func (h *readyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Decided first, from the term alone: a 200 never waits on Redis, and
	// the look-up below only adds to a 503's body.
	s := h.el.standing()
	code, b := http.StatusOK, readyBody{Status: "leader", Token: s.token}
	if !s.leading {
		code, b = http.StatusServiceUnavailable, h.notLeading(r.Context(), s)
	}
	body, _ := json.Marshal(b)
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

// notLeading is the body of a 503.
func (h *readyHandler) notLeading(ctx context.Context, s standing) readyBody {
	var b readyBody
	var why []string
	leader, token, lookErr := h.leader(ctx, s.token)
	switch {
	case token > 0:
		b = readyBody{Status: "follower", Leader: leader, Token: token}
	case s.lost != nil:
		b = readyBody{Status: "lost", Token: s.token}
		why = append(why, s.lost.Error())
	default:
		b = readyBody{Status: "follower"}
	}
	switch {
	case lookErr == nil || errors.Is(lookErr, context.Canceled):
	case errors.Is(lookErr, locker.ErrUnavailable), errors.Is(lookErr, context.DeadlineExceeded):
		why = append(why, "redis unreachable")
	default:
		why = append(why, "leader unknown") // the error may name hosts: not told
	}
	if !s.campaigning {
		why = append(why, "not campaigning")
	}
	b.Reason = strings.Join(why, "; ")
	return b
}

// leader looks up who holds the election's lock in a term later than
// after (this process's last), and returns the holder's label and token;
// token is 0 when there is none, or no look-up.
func (h *readyHandler) leader(ctx context.Context, after int64) (label string, token int64, err error) {
	if h.lookup <= 0 {
		return "", 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.lookup)
	defer cancel()
	st, err := h.el.lk.Inspect(ctx, h.el.name)
	if err != nil {
		return "", 0, err
	}
	hd := st.Holder
	if hd == nil || hd.Fence <= after {
		// Nobody holds it, or the holder is this process's own lost term,
		// still in Redis until its lease there runs out.
		return "", 0, nil
	}
	// A holder's label is its Locker's and the Elector's, joined by "; ".
	label = hd.Label
	if label == h.el.params.Label {
		label = ""
	}
	return strings.TrimSuffix(label, "; "+h.el.params.Label), hd.Fence, nil
}

// standing is what an Elector knows of its own leadership at one moment.
type standing struct {
	leading     bool
	token       int64 // the current term's, else the last term's; 0 before the first
	lost        error // why the last term ended, when it was lost: a cause matching locker.ErrLockLost
	campaigning bool  // a Run or a Campaign is under way
}

// standing reads e's leadership now. Like IsLeader, it asks the term's
// context, whose Err reports a lease that ran out at once.
func (e *Elector) standing() standing {
	s := standing{campaigning: e.busy.Load()}
	e.mu.Lock()
	t := e.last
	e.mu.Unlock()
	if t == nil {
		return s
	}
	s.token = t.lease.Token()
	if t.ctx.Err() == nil {
		s.leading = true
		return s
	}
	if cause := context.Cause(t.ctx); errors.Is(cause, locker.ErrLockLost) {
		s.lost = cause
	}
	return s
}
