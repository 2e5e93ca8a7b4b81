package guard

import (
	"fmt"
	"reflect"
)

// GinOption marks an Option as accepted by every adapter: each adapter
// package takes options of its own interface type (middleware.Option for
// Gin, stdhttp.Option, interceptor.Option for gRPC, connectrpc.Option,
// lockecho.Option, ...), which an Option satisfies through the marker
// methods below and an adapter's own With... options through only that
// adapter's method. Passing one
// adapter's option to another is therefore a compile error, while the
// guard's options are written once here and pass anywhere.
func (Option) GinOption() {}

// HTTPOption marks an Option as accepted by every adapter (see GinOption).
func (Option) HTTPOption() {}

// GRPCOption marks an Option as accepted by every adapter (see GinOption).
func (Option) GRPCOption() {}

// ConnectOption marks an Option as accepted by every adapter (see
// GinOption).
func (Option) ConnectOption() {}

// EchoOption marks an Option as accepted by every adapter (see GinOption):
// the Echo adapter's lockecho.Option.
func (Option) EchoOption() {}

// Echo5Option marks an Option as accepted by every adapter (see
// GinOption): the Echo v5 adapter's lockecho5.Option.
func (Option) Echo5Option() {}

// FiberOption marks an Option as accepted by every adapter (see
// GinOption).
func (Option) FiberOption() {}

// AdapterOption makes an adapter's own setting an Option for the guards
// in t, so that users pass it among the guard's options: set is applied
// to the adapter's settings, of type *S, by ApplyAdapterOptions. Its error
// becomes a construction error wrapping ErrBadOption. Guards ignore
// adapter options. An adapter hands it to users inside a type of its own
// (see GinOption), so that no other adapter accepts it.
func AdapterOption[S any](name string, t Target, set func(settings *S) error) Option {
	return Option{name: name, use: t, adapter: func(v any) error {
		s, ok := v.(*S)
		if !ok {
			return fmt.Errorf("an option for %v, not %T", reflect.TypeFor[*S](), v)
		}
		return set(s)
	}}
}

// ApplyAdapterOptions applies the adapter options among opts to settings,
// in order, for a guard of target t (LockGuards or IdempotencyGuards), and
// returns their errors joined, each wrapping ErrBadOption: an option that
// does not apply to t, an option of another adapter, an invalid value.
// The guard's own options are skipped.
func ApplyAdapterOptions[S any](t Target, opts []Option, settings *S) error {
	var errs []error
	for _, o := range opts {
		switch {
		case o.adapter == nil:
		case o.use&t == 0:
			errs = append(errs, fmt.Errorf("%w: %s does not apply to this guard", ErrBadOption, o.name))
		default:
			if err := o.adapter(settings); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadOption, o.name, err))
			}
		}
	}
	return joinErrs(errs)
}

// AdapterOptions returns the Options behind an adapter's typed options O
// (an interface such as middleware.Option): an Option as it is, and an
// adapter's own option through its GuardOption method. Nil entries are
// skipped, as the zero Option is. Any other value — a type outside the
// library that implements O's marker — is an error wrapping ErrBadOption.
func AdapterOptions[O any](opts []O) ([]Option, error) {
	out := make([]Option, 0, len(opts))
	var errs []error
	for _, o := range opts {
		switch v := any(o).(type) {
		case nil:
		case Option:
			out = append(out, v)
		case interface{ GuardOption() Option }:
			out = append(out, v.GuardOption())
		default:
			errs = append(errs, fmt.Errorf("%w: %T is not an option of this adapter", ErrBadOption, v))
		}
	}
	return out, joinErrs(errs)
}
