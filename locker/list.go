package locker

import (
	"context"

	"github.com/locktag/locktag/locker/internal/admin"
)

// List returns one page of the names of the locks of every kind whose name
// starts with prefix; start with cursor "" and pass next back until it is
// "". Each page is one SCAN step (COUNT 1000) in a read-only script, never
// KEYS; like SCAN, a name may repeat, and one that comes or goes during
// the listing may be missed. It visits every master of a Cluster (a driver
// with driver.Masters) or of Redlock in turn. Errors: ErrUnavailable (retry
// the same cursor), ErrBadOption for a cursor it did not make. See
// docs/operations.md#who-holds-a-lock-who-waits-inspect-and-list.
func (l *Locker) List(ctx context.Context, prefix, cursor string) (names []string, next string, err error) {
	return admin.List(ctx, l.admin(), l.o.bounds(), l.o.prefix, prefix, cursor)
}
