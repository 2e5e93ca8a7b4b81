// Package optionerr holds ErrBadOption, the sentinel every package of the
// library wraps for an invalid option, in a leaf that imports nothing of
// the library. The tag language (keyexpr) and the driver seam
// (locker/driver) both import it, so neither imports the other for one
// error value. Users match it as locker.ErrBadOption or
// driver.ErrBadOption: both names are this value.
package optionerr

import "errors"

// ErrBadOption is wrapped by the error of an option with an invalid or
// inapplicable value; the message names the option.
var ErrBadOption = errors.New("locker: bad option")
