package admin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
)

// parseState reads inspect.lua's reply.
func parseState(name string, v any) (*View, error) {
	bad := func() (*View, error) { return nil, fmt.Errorf("locker: inspect: unexpected reply %v", v) }
	a, _ := v.([]any)
	if len(a) < 6 {
		return bad()
	}
	sec, _ := strconv.ParseInt(str(a[0]), 10, 64)
	usec, _ := strconv.ParseInt(str(a[1]), 10, 64)
	nowUS := sec*1_000_000 + usec
	nowMS := nowUS / 1000
	st := &View{Name: name, Kind: str(a[2])}
	limit, _ := a[3].(int64)
	st.Limit = int(limit)
	nh, _ := a[4].(int64)
	i := 5
	if nh < 0 || len(a) < i+4*int(nh)+1 {
		return bad()
	}
	for range nh {
		h, err := parseHolder(str(a[i]), str(a[i+1]), a[i+2], str(a[i+3]), nowMS)
		if err != nil {
			return nil, err
		}
		st.Holders = append(st.Holders, h)
		i += 4
	}
	for j := range st.Holders {
		if h := &st.Holders[j]; st.Kind == kindMutex || h.Mode == "write" {
			st.Holder = h
		}
	}
	queued, _ := a[i].(int64)
	st.Queued = int(queued)
	i++
	if (len(a)-i)%4 != 0 {
		return bad()
	}
	for ; i < len(a); i += 4 {
		w := Waiter{Owner: str(a[i])}
		if arrived, err := strconv.ParseFloat(str(a[i+1]), 64); err == nil {
			w.Waited = time.Duration(nowUS-int64(arrived)) * time.Microsecond
		}
		// details: "deadline_ms ttl_ms sid[ label]"
		if f := strings.SplitN(str(a[i+2]), " ", 4); len(f) >= 3 {
			if deadline, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				w.WaitLeft = time.Duration(deadline-nowMS) * time.Millisecond
			}
			if len(f) == 4 {
				w.Label = f[3]
			}
		}
		switch str(a[i+3]) {
		case "r":
			w.Mode = "read"
		case "w":
			w.Mode = "write"
		}
		st.Waiters = append(st.Waiters, w)
	}
	return st, nil
}

// parseHolder reads one holder of inspect.lua's reply: its record is
// "fence holds[ granted[ label]]".
func parseHolder(owner, record string, left any, mode string, nowMS int64) (Holder, error) {
	f := strings.SplitN(record, " ", 4)
	if len(f) < 2 {
		return Holder{}, fmt.Errorf("locker: inspect: unexpected holder record of %d fields", len(f))
	}
	h := Holder{Owner: owner, Mode: mode}
	h.Fence, _ = strconv.ParseInt(f[0], 10, 64)
	h.Holds, _ = strconv.Atoi(f[1])
	if ms, _ := left.(int64); ms > 0 {
		h.LeaseLeft = time.Duration(ms) * time.Millisecond
	}
	if len(f) >= 3 {
		if granted, err := strconv.ParseInt(f[2], 10, 64); err == nil {
			h.Held = time.Duration(max(nowMS-granted, 0)) * time.Millisecond
		}
	}
	if len(f) == 4 {
		h.Label = f[3]
	}
	return h, nil
}

// str returns a reply element as a string ("" for anything else).
func str(v any) string {
	s, _ := v.(string)
	return s
}

// handedTo is a force-release's hand-over: the waiter token and its grant.
type handedTo struct {
	token string
	grant hub.Grant
}

// parseForced reads force.lua's (mutex) or sem_force.lua's reply.
func parseForced(kind string, v any) ([]Freed, handedTo, error) {
	var g handedTo
	a, _ := v.([]any)
	bad := func() ([]Freed, handedTo, error) {
		return nil, g, lockerr.Unavailable(fmt.Errorf("locker: force: unexpected reply %v", v))
	}
	var out []Freed
	if kind == kindMutex && len(a) > 0 {
		if len(a) != 6 {
			return bad()
		}
		if g.token = str(a[2]); g.token != "" {
			g.grant.Fence, _ = a[3].(int64)
			g.grant.Server, _ = a[4].(int64)
			pttl, _ := a[5].(int64)
			g.grant.PTTL = time.Duration(pttl) * time.Millisecond
		}
		a = a[:2]
	}
	writer := ""
	if kind != kindMutex && len(a) > 0 {
		writer, a = str(a[0]), a[1:]
	}
	if len(a)%2 != 0 {
		return bad()
	}
	for i := 0; i < len(a); i += 2 {
		h, err := parseHolder(str(a[i]), str(a[i+1]), nil, "", 0)
		if err != nil {
			return bad()
		}
		h.Held = 0 // not measured here
		switch {
		case kind != kindRW:
		case h.Owner == writer:
			h.Mode = "write"
		default:
			h.Mode = "read"
		}
		out = append(out, Freed{Kind: kind, Holder: h})
	}
	return out, g, nil
}
