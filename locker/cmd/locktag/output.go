package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/locktag/locktag/locker"
)

// What -o json prints. Durations are whole milliseconds (a rate's
// interval microseconds), as the ops page's JSON has them.

// lockOut is one lock: Inspect's State.
type lockOut struct {
	Name    string      `json:"name"`
	Kind    string      `json:"kind"`
	Limit   int         `json:"limit,omitempty"`
	Holders []holderOut `json:"holders"`
	Waiters []waiterOut `json:"waiters"`
	// Queued counts every waiter; Waiters lists the first 1000.
	Queued int `json:"queued"`
	// OtherKinds are kinds of the same name found by the listing that
	// Inspect does not show (it shows one kind a name).
	OtherKinds []string `json:"otherKinds,omitempty"`
}

// holderOut is one holder.
type holderOut struct {
	Owner       string `json:"owner"`
	Fence       int64  `json:"fence"`
	Holds       int    `json:"holds"`
	LeaseLeftMs int64  `json:"leaseLeftMs"`
	HeldMs      int64  `json:"heldMs"`
	Label       string `json:"label"`
	Mode        string `json:"mode,omitempty"`
}

// waiterOut is one queued waiter; Position 1 is granted the lock next.
type waiterOut struct {
	Position   int    `json:"position"`
	Owner      string `json:"owner"`
	WaitedMs   int64  `json:"waitedMs"`
	WaitLeftMs int64  `json:"waitLeftMs"`
	Label      string `json:"label"`
	Mode       string `json:"mode,omitempty"`
}

// rateOut is one rate key: InspectRate's RateState.
type rateOut struct {
	Name       string `json:"name"`
	Remaining  int    `json:"remaining"`
	Burst      int    `json:"burst"`
	IntervalUs int64  `json:"intervalUs"`
	ResetMs    int64  `json:"resetMs"`
}

// recordOut is one idempotency record: InspectIdempotency's
// IdempotencyState. A record stores no time, so it has no age.
type recordOut struct {
	Name  string `json:"name"`
	State string `json:"state"` // "in flight" or "done"
	// Fingerprint is the SHA-256, in hex, of the request's fingerprint.
	Fingerprint string `json:"fingerprint"`
	Owner       string `json:"owner"` // the in-flight claim's token; "" when done
	ExpiresInMs int64  `json:"expiresInMs"`
	Waiting     int    `json:"waiting"`
}

// refusedOut is a name whose record the command refused to read.
type refusedOut struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Error string `json:"error"`
}

func lockOf(st *locker.State) lockOut {
	l := lockOut{Name: st.Name, Kind: st.Kind, Limit: st.Limit, Queued: st.Queued,
		Holders: []holderOut{}, Waiters: []waiterOut{}}
	for _, h := range st.Holders {
		l.Holders = append(l.Holders, holderOf(h))
	}
	for i, w := range st.Waiters {
		l.Waiters = append(l.Waiters, waiterOut{Position: i + 1, Owner: w.Owner, WaitedMs: w.Waited.Milliseconds(),
			WaitLeftMs: w.WaitLeft.Milliseconds(), Label: w.Label, Mode: w.Mode})
	}
	return l
}

func holderOf(h locker.Holder) holderOut {
	return holderOut{Owner: h.Owner, Fence: h.Fence, Holds: h.Holds, LeaseLeftMs: h.LeaseLeft.Milliseconds(),
		HeldMs: h.Held.Milliseconds(), Label: h.Label, Mode: h.Mode}
}

func rateOf(st locker.RateState) rateOut {
	return rateOut{Name: st.Name, Remaining: st.Remaining, Burst: st.Burst,
		IntervalUs: st.Interval.Microseconds(), ResetMs: st.Reset.Milliseconds()}
}

func recordOf(st locker.IdempotencyState) recordOut {
	return recordOut{Name: st.Name, State: st.State, Fingerprint: st.Fingerprint, Owner: st.Owner,
		ExpiresInMs: st.ExpiresIn.Milliseconds(), Waiting: st.Waiting}
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// table is a tab-aligned table on w.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// lockHeader is the header of the locks table (writeLockRows).
const lockHeader = "NAME\tKIND\tROLE\tOWNER\tFENCE\tHOLDS\tLEFT\tFOR\tLABEL\n"

// writeLockRows writes l's rows of the locks table: a row per holder
// (LEFT: the lease left; FOR: held for) and per waiter in queue order
// (LEFT: the wait left; FOR: waited for).
func writeLockRows(tw io.Writer, l lockOut) {
	kind := l.Kind
	if l.Limit > 0 {
		kind += "(" + strconv.Itoa(l.Limit) + ")"
	}
	if len(l.OtherKinds) > 0 {
		kind += " +" + strings.Join(l.OtherKinds, ",+") + " (not shown)"
	}
	name := clean(l.Name)
	for _, h := range l.Holders {
		role := "holder"
		if h.Mode != "" {
			role += " " + h.Mode
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", name, kind, role, h.Owner, h.Fence, h.Holds,
			duration(ms(h.LeaseLeftMs)), duration(ms(h.HeldMs)), clean(h.Label))
	}
	for _, w := range l.Waiters {
		role := "waiter " + strconv.Itoa(w.Position)
		if w.Mode != "" {
			role += " " + w.Mode
		}
		left := duration(ms(w.WaitLeftMs))
		if w.WaitLeftMs <= 0 {
			left = "gave up"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t%s\t%s\t%s\n", name, kind, role, w.Owner, left, duration(ms(w.WaitedMs)), clean(w.Label))
	}
	if more := l.Queued - len(l.Waiters); more > 0 {
		fmt.Fprintf(tw, "%s\t%s\t%d more waiters\t\t\t\t\t\t\n", name, kind, more)
	}
	if len(l.Holders) == 0 && l.Queued == 0 {
		fmt.Fprintf(tw, "%s\t%s\tfree\t\t\t\t\t\t\n", name, kind)
	}
}

// rateHeader is the header of the rate keys table.
const rateHeader = "RATE KEY\tREMAINING\tBURST\tINTERVAL\tFULL IN\n"

func writeRateRow(tw io.Writer, r rateOut) {
	fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", clean(r.Name), r.Remaining, r.Burst,
		duration(time.Duration(r.IntervalUs)*time.Microsecond), duration(ms(r.ResetMs)))
}

// recordHeader is the header of the idempotency records table.
const recordHeader = "IDEMPOTENCY RECORD\tSTATE\tFINGERPRINT\tOWNER\tEXPIRES IN\tWAITING\n"

// shortFingerprint is how many hex digits of a fingerprint ls shows.
const shortFingerprint = 12

// writeRecordRow writes r's row of the records table: its fingerprint
// cut to shortFingerprint digits unless full; OWNER "-" when done.
func writeRecordRow(tw io.Writer, r recordOut, full bool) {
	fp := r.Fingerprint
	if !full && len(fp) > shortFingerprint {
		fp = fp[:shortFingerprint]
	}
	owner := r.Owner
	if owner == "" {
		owner = "-"
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", clean(r.Name), r.State, fp, owner, duration(ms(r.ExpiresInMs)), r.Waiting)
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// duration formats d for a table: milliseconds under a second, tenths of
// a second under a minute, else to the second.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return d.String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// clean is s for a text table: quoted when it holds control characters
// (a tab or a newline would break the table), else as it is.
func clean(s string) string {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}
