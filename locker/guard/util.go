package guard

import "errors"

// joinErrs is errors.Join, but returns the error itself when there is one,
// so that messages stay on one line.
func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
