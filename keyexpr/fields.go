package keyexpr

import (
	"errors"
	"slices"
	"strconv"
)

// Fields are a lock tag's fields as separate values, for tags that come from
// somewhere other than tag text — a proto method option, a config file. Each
// field holds what the tag's quoted value would hold; an empty field is
// absent (Key is required).
type Fields struct {
	Key    string // key template; required unless Keys is set
	Keys   string // key templates separated by commas (a multi-key lock); not with Key
	Expire string // Go duration of at least 1ms; "" = watchdog mode
	Wait   string // non-negative Go duration; "" = fail at once
	Name   string // metrics/span name; "" = the adapter's default
	Long   string // "hash" or "reject"; "" = "reject"
	Limit  string // permits of a semaphore, 1 to MaxLimit; "" = a mutex
	Keep   string // Go duration of at least 1ms held after a successful call; "" = none
	Mode   string // "read" or "write": a read/write lock; "" = a mutex
	Rate   string // "N/period", such as "100/1m": a rate limit, which takes no lock; "" = none
	Burst  string // requests admitted at once, 1 to MaxRate; only with Rate; "" = Rate's N
}

// NewSpec builds the *Spec the equivalent tag would parse to, with the same
// validation as ParseTag and without writing and re-reading tag text. Errors
// are *TagError values, as from ParseTag, naming the field; Spec.Tag (and
// TagError.Tag) is the equivalent tag, in the field order key, keys,
// expire, wait, name, long, limit, keep, mode, rate, burst, so that messages and logs
// can quote it.
func NewSpec(f Fields) (*Spec, error) {
	s := &Spec{}
	type field struct{ name, value string }
	all := [...]field{{"key", f.Key}, {"keys", f.Keys}, {"expire", f.Expire}, {"wait", f.Wait}, {"name", f.Name}, {"long", f.Long}, {"limit", f.Limit}, {"keep", f.Keep}, {"mode", f.Mode}, {"rate", f.Rate}, {"burst", f.Burst}}
	var tag []byte
	starts := make([]int, len(all))
	for i, fl := range all {
		if fl.value == "" && (fl.name != "key" || f.Keys != "") {
			starts[i] = -1
			continue
		}
		if len(tag) > 0 {
			tag = append(tag, ' ')
		}
		tag = append(tag, fl.name...)
		tag = append(tag, ':')
		starts[i] = len(tag)
		tag = strconv.AppendQuote(tag, fl.value)
	}
	s.Tag = string(tag)
	if starts[0] >= 0 {
		s.keyQuote = starts[0]
		s.keyExact = strconv.Quote(f.Key) == `"`+f.Key+`"`
	}
	if starts[1] >= 0 {
		s.keysQuote = starts[1]
		s.keysExact = strconv.Quote(f.Keys) == `"`+f.Keys+`"`
	}
	for i, fl := range all {
		if starts[i] < 0 {
			continue
		}
		if err := s.setField(fl.name, fl.value); err != nil {
			pos := starts[i]
			if fl.name == "key" {
				pos = s.keyErrPos(err)
			}
			if fl.name == "keys" {
				pos = s.keysErrPos(err)
				var ie *itemError
				if errors.As(err, &ie) {
					err = ie.err
				}
			}
			return nil, &TagError{Tag: s.Tag, Field: fl.name, Pos: pos, Err: err}
		}
	}
	if a, b, err := s.conflict(); err != nil {
		// Told at the later of the two in the equivalent tag, as ParseTag does.
		at := func(name string) int { return slices.IndexFunc(all[:], func(f field) bool { return f.name == name }) }
		i := max(at(a), at(b))
		return nil, &TagError{Tag: s.Tag, Field: all[i].name, Pos: starts[i] - len(all[i].name) - 1, Err: err}
	}
	s.defaults()
	return s, nil
}
