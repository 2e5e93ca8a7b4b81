package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/locktag/locktag/locker"
)

// pattern is ls's and watch's argument: a name prefix, or a glob (* and
// ?) matched against the whole name.
type pattern struct {
	prefix string // what every matching name starts with: ListStored's prefix
	glob   string // "" for a plain prefix
}

func parsePattern(s string) pattern {
	i := strings.IndexAny(s, "*?")
	if i < 0 {
		return pattern{prefix: s}
	}
	return pattern{prefix: s[:i], glob: s}
}

// Match reports whether name matches.
func (p pattern) Match(name string) bool {
	if p.glob == "" {
		return strings.HasPrefix(name, p.prefix)
	}
	return globMatch(p.glob, name)
}

// globMatch matches name against glob: '*' is any run of characters, '?'
// any one character, anything else itself.
func globMatch(glob, name string) bool {
	g, n := []rune(glob), []rune(name)
	// The last '*' seen and where in n it was tried from: on a mismatch
	// the '*' takes one more character.
	star, from := -1, 0
	for i, j := 0, 0; j < len(n) || i < len(g); {
		switch {
		case i < len(g) && g[i] == '*':
			star, from = i, j
			i++
		case i < len(g) && j < len(n) && (g[i] == '?' || g[i] == n[j]):
			i++
			j++
		case star >= 0 && from < len(n):
			from++
			i, j = star+1, from
		default:
			return false
		}
	}
	return true
}

// listing is what ls found.
type listing struct {
	Prefix      string       `json:"prefix"`
	Pattern     string       `json:"pattern"`
	Locks       []lockOut    `json:"locks"`
	Rates       []rateOut    `json:"rates"`
	Idempotency []recordOut  `json:"idempotency"`
	Refused     []refusedOut `json:"refused"`
	// Truncated: more names matched than --limit; the rest are not shown.
	Truncated bool `json:"truncated"`
}

// gather lists what matches p (at most limit names; 0: no limit) and
// reads each lock, rate key and idempotency record. It fails only when
// Redis does: a record of another protocol is listed as refused.
func gather(ctx context.Context, lk *locker.Locker, p pattern, limit int) (*listing, error) {
	out := &listing{Locks: []lockOut{}, Rates: []rateOut{}, Idempotency: []recordOut{}, Refused: []refusedOut{}}
	kinds := map[string][]string{} // lock names and the kinds listed for each
	var names, rates, records []string
	seen := map[locker.Stored]bool{}
	for cursor := ""; ; {
		page, next, err := lk.ListStored(ctx, p.prefix, cursor)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			if seen[s] || !p.Match(s.Name) {
				continue
			}
			if limit > 0 && len(seen) == limit {
				out.Truncated = true
				break
			}
			seen[s] = true
			switch s.Kind {
			case locker.KindIdempotency:
				records = append(records, s.Name)
			case locker.KindRate:
				rates = append(rates, s.Name)
			default:
				if kinds[s.Name] == nil {
					names = append(names, s.Name)
				}
				kinds[s.Name] = append(kinds[s.Name], s.Kind)
			}
		}
		if cursor = next; cursor == "" || out.Truncated {
			break
		}
	}
	slices.Sort(names)
	for _, name := range names {
		st, err := lk.Inspect(ctx, name)
		switch {
		case errors.Is(err, locker.ErrProtocol):
			out.Refused = append(out.Refused, refusedOut{Name: name, Kind: strings.Join(kinds[name], ","), Error: err.Error()})
			continue
		case err != nil:
			return nil, err
		case st.Kind == "":
			continue // gone since it was listed
		}
		l := lockOf(st)
		for _, k := range kinds[name] {
			if k != st.Kind {
				l.OtherKinds = append(l.OtherKinds, k)
			}
		}
		out.Locks = append(out.Locks, l)
	}
	slices.Sort(rates)
	for _, name := range rates {
		st, ok, err := lk.InspectRate(ctx, name)
		switch {
		case errors.Is(err, locker.ErrProtocol):
			out.Refused = append(out.Refused, refusedOut{Name: name, Kind: locker.KindRate, Error: err.Error()})
		case err != nil:
			return nil, err
		case ok:
			out.Rates = append(out.Rates, rateOf(st))
		}
	}
	slices.Sort(records)
	for _, name := range records {
		st, ok, err := lk.InspectIdempotency(ctx, name)
		switch {
		case errors.Is(err, locker.ErrProtocol):
			out.Refused = append(out.Refused, refusedOut{Name: name, Kind: locker.KindIdempotency, Error: err.Error()})
		case err != nil:
			return nil, err
		case ok:
			out.Idempotency = append(out.Idempotency, recordOf(st))
		}
	}
	return out, nil
}

func lsCommand() *command {
	var limit int
	return &command{
		name:  "ls",
		usage: lsUsage,
		flags: func(fs *flag.FlagSet) { fs.IntVar(&limit, "limit", 1000, "") },
		args: func(args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("unexpected argument %q", args[1])
			}
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (no limit) or more", limit)
			}
			return nil
		},
		run: func(ctx context.Context, c *cli, s *session, args []string) int {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			found, err := gather(ctx, s.lk, parsePattern(arg), limit)
			if err != nil {
				return c.fail("ls", "", err)
			}
			found.Prefix, found.Pattern = c.opts.prefix, arg
			if c.opts.output == "json" {
				writeJSON(c.stdout, found)
			} else {
				writeListing(c.stdout, found, limit)
			}
			for _, r := range found.Refused {
				fmt.Fprintf(c.stderr, "locktag ls: %s: refused: %s\n", quoteName(r.Name), r.Error)
			}
			if len(found.Refused) > 0 {
				fmt.Fprintf(c.stderr, "locktag ls: %s\n", refusalHint(locker.ErrProtocol))
				return exitRefused
			}
			return exitOK
		},
	}
}

// writeListing writes ls's tables: locks, rate keys, idempotency
// records, refused names; or a line saying there is nothing.
func writeListing(w io.Writer, l *listing, limit int) {
	if len(l.Locks)+len(l.Rates)+len(l.Idempotency)+len(l.Refused) == 0 {
		fmt.Fprintf(w, "nothing under the prefix %q matches %q\n", l.Prefix, l.Pattern)
		return
	}
	sep := ""
	if len(l.Locks) > 0 {
		tw := table(w)
		fmt.Fprint(tw, lockHeader)
		for _, lk := range l.Locks {
			writeLockRows(tw, lk)
		}
		tw.Flush()
		sep = "\n"
	}
	if len(l.Rates) > 0 {
		fmt.Fprint(w, sep)
		tw := table(w)
		fmt.Fprint(tw, rateHeader)
		for _, r := range l.Rates {
			writeRateRow(tw, r)
		}
		tw.Flush()
		sep = "\n"
	}
	if len(l.Idempotency) > 0 {
		fmt.Fprint(w, sep)
		tw := table(w)
		fmt.Fprint(tw, recordHeader)
		for _, r := range l.Idempotency {
			writeRecordRow(tw, r, false)
		}
		tw.Flush()
		sep = "\n"
	}
	if len(l.Refused) > 0 {
		fmt.Fprint(w, sep)
		tw := table(w)
		fmt.Fprint(tw, "REFUSED\tKIND\tWHY\n")
		for _, r := range l.Refused {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", clean(r.Name), r.Kind, r.Error)
		}
		tw.Flush()
	}
	if l.Truncated {
		fmt.Fprintf(w, "\n(more than %d names match: the rest are not shown; narrow the pattern or raise --limit)\n", limit)
	}
}

// inspected is what inspect found for one name.
type inspected struct {
	Name   string     `json:"name"`
	Lock   *lockOut   `json:"lock"`
	Rate   *rateOut   `json:"rate"`
	Record *recordOut `json:"record"`
}

func inspectCommand() *command {
	return &command{
		name:  "inspect",
		usage: inspectUsage,
		args:  argCount(1, 1, "lock name"),
		run: func(ctx context.Context, c *cli, s *session, args []string) int {
			name := args[0]
			out := inspected{Name: name}
			if !recordName(name) {
				st, err := s.lk.Inspect(ctx, name)
				if err != nil {
					return c.fail("inspect", name, err)
				}
				if st.Kind != "" {
					l := lockOf(st)
					out.Lock = &l
				}
			}
			rs, ok, err := s.lk.InspectRate(ctx, name)
			switch {
			case errors.Is(err, locker.ErrKindUnsupported):
			case err != nil:
				return c.fail("inspect", name, err)
			case ok:
				r := rateOf(rs)
				out.Rate = &r
			}
			is, ok, err := s.lk.InspectIdempotency(ctx, name)
			switch {
			case errors.Is(err, locker.ErrIdempotencyUnsupported):
			case err != nil:
				return c.fail("inspect", name, err)
			case ok:
				r := recordOf(is)
				out.Record = &r
			}
			found := out.Lock != nil || out.Rate != nil || out.Record != nil
			if c.opts.output == "json" {
				writeJSON(c.stdout, out)
			} else if found {
				writeInspected(c.stdout, out)
			}
			if !found {
				fmt.Fprintf(c.stderr, "locktag inspect %s: nothing held or waited for, no rate key and no idempotency record, under the prefix %q\n", quoteName(name), c.opts.prefix)
				return exitNotFound
			}
			return exitOK
		},
	}
}

// recordName reports whether name has the shape of IdempotencyName's
// names: "idem:" and 43 characters of base64url. Such a name is a
// record's, not a lock's: its ":rw" key holds the record's waiters, which
// Inspect would read as a read/write lock's holders (ListStored tells the
// two apart by the same shape).
func recordName(name string) bool {
	const head, body = "idem:", 43
	if len(name) != len(head)+body || !strings.HasPrefix(name, head) {
		return false
	}
	return !strings.ContainsFunc(name[len(head):], func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	})
}

// writeInspected writes one lock in full: a summary line, then its rows
// of the locks table; then its rate key and its idempotency record (the
// whole fingerprint), if any.
func writeInspected(w io.Writer, in inspected) {
	if l := in.Lock; l != nil {
		state := "free"
		switch n := len(l.Holders); {
		case n == 1:
			state = "held"
		case n > 1:
			state = fmt.Sprintf("held by %d", n)
		}
		fmt.Fprintf(w, "%s: %s, %s, %d waiting\n", clean(l.Name), l.Kind, state, l.Queued)
		tw := table(w)
		fmt.Fprint(tw, lockHeader)
		writeLockRows(tw, *l)
		tw.Flush()
	}
	if r := in.Rate; r != nil {
		if in.Lock != nil {
			fmt.Fprintln(w)
		}
		tw := table(w)
		fmt.Fprint(tw, rateHeader)
		writeRateRow(tw, *r)
		tw.Flush()
	}
	if r := in.Record; r != nil {
		if in.Lock != nil || in.Rate != nil {
			fmt.Fprintln(w)
		}
		tw := table(w)
		fmt.Fprint(tw, recordHeader)
		writeRecordRow(tw, *r, true)
		tw.Flush()
	}
}
