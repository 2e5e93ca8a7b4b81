package protocol

import (
	"context"
	"fmt"
	"strings"

	"github.com/locktag/locktag/locker/driver"
)

// Args are one call's arguments, by name: the caller sets what its script
// takes (Arg constants, generated from Layouts) and a Call sends them in
// its layout's order. A nil optional argument is not sent, nor is any
// after it. Args live on the caller's stack: filling and sending them
// allocates nothing.
type Args [numArgs]any

// Call is one script with its layout: it sends Args in the order Layouts
// gives, so that no caller knows a position.
type Call struct {
	*driver.Script
	Name  string // as in ByName and Layouts
	order []Arg  // the layout's arguments, in order
	need  int    // arguments up to the last required one
	many  uint64 // bit i: argument i stands for many ("name..."), a []any spliced in
}

// NewCall returns s run under the layout named name (Layouts, or the
// start-up check's). It panics when name has no layout or the layout
// names an argument with no Arg constant (run go generate): both are
// programming errors.
func NewCall(name string, s *driver.Script) *Call {
	l, ok := layoutFor(name)
	if !ok {
		panic(fmt.Sprintf("protocol: %s has no layout", name))
	}
	c := &Call{Script: s, Name: name}
	for i, f := range l.Args {
		if strings.HasSuffix(f.Name, "...") {
			c.many |= 1 << i
		}
		a, ok := argByName[f.Name]
		if !ok {
			panic(fmt.Sprintf("protocol: %s's argument %q has no Arg constant (go generate ./locker/internal/protocol)", name, f.Name))
		}
		c.order = append(c.order, a)
		if !f.Optional {
			c.need = i + 1
		}
	}
	return c
}

// Append appends a's arguments to dst in c's order: every one up to the
// last required one (a nil one panics: a caller's mistake), then the
// optional ones until the first nil. An argument that stands for many
// ("name..." in the layout) is a []any, spliced in.
func (c *Call) Append(dst []any, a *Args) []any {
	for i, n := range c.order {
		v := a[n]
		if v == nil {
			if i >= c.need {
				break
			}
			panic(fmt.Sprintf("protocol: %s called without its argument %d (Arg %d)", c.Name, i+1, n))
		}
		if c.many&(1<<i) != 0 {
			dst = append(dst, v.([]any)...)
			continue
		}
		dst = append(dst, v)
	}
	return dst
}

// Eval runs c on d with keys and a's arguments.
func (c *Call) Eval(ctx context.Context, d driver.Driver, keys driver.Keys, a *Args) (any, error) {
	return d.Eval(ctx, c.Script, keys, c.Append(make([]any, 0, len(c.order)), a)...)
}
