package guard

import (
	"fmt"
	"reflect"

	"github.com/locktag/locktag/locker"
)

// AdapterOption makes an adapter's own setting an Option for the guards
// in t, so that users pass it in the same list as the guard's options.
// owner is the adapter package that defines it, as users write it
// ("lockecho"), and name the option's function ("WithErrorHandler"); they
// name the option in errors. set is applied to the adapter's settings, of
// type *S, by that adapter's ApplyAdapterOptions, and its error becomes a
// construction error wrapping locker.ErrBadOption. Guards ignore adapter options;
// another adapter refuses one at construction (see ApplyAdapterOptions).
func AdapterOption[S any](owner, name string, t Target, set func(settings *S) error) Option {
	return Option{
		name:     owner + "." + name,
		owner:    owner,
		use:      t,
		settings: reflect.TypeFor[*S](),
		adapter:  func(v any) error { return set(v.(*S)) },
	}
}

// ApplyAdapterOptions applies the adapter options among opts to settings,
// in order, for a guard of target t (LockGuards or IdempotencyGuards), and
// returns their errors joined, each wrapping locker.ErrBadOption: an option of
// another adapter (the error names the option, the adapter it belongs to
// and this one, which adapter names as users know it, such as
// "middleware (Gin)"), an option that does not apply to t, an invalid
// value. The guard's own options are skipped: every adapter accepts them.
func ApplyAdapterOptions[S any](adapter string, t Target, opts []Option, settings *S) error {
	var errs []error
	for _, o := range opts {
		switch {
		case o.adapter == nil:
		case o.settings != reflect.TypeFor[*S]():
			errs = append(errs, fmt.Errorf("%w: %s is an option of %s, given to %s", locker.ErrBadOption, o.name, o.owner, adapter))
		case o.use&t == 0:
			errs = append(errs, fmt.Errorf("%w: %s does not apply to this guard", locker.ErrBadOption, o.name))
		default:
			if err := o.adapter(settings); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %w", locker.ErrBadOption, o.name, err))
			}
		}
	}
	return joinErrs(errs)
}
