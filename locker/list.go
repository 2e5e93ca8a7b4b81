package locker

import (
	"context"
	_ "embed"

	"github.com/locktag/locktag/locker/internal/admin"
)

// List returns the names of the locks of every kind (mutex, semaphore,
// read/write) that exist now (held, or with waiters queued behind a
// lapsed holder) whose name starts with prefix ("" for all), one page at
// a time. Start with cursor ""; pass the returned next cursor to get the
// following page, until next is "". A page may be empty while next is
// not. It never runs KEYS: each page is one SCAN step
// (COUNT 1000) in a read-only script, so it is safe on a large keyspace;
// like SCAN, a lock that exists for the whole listing is returned at least
// once, one that comes or goes during it may or may not be, and a name may
// repeat.
//
// On Redis Cluster it visits every master in turn, when the driver
// exposes them (driver.Masters: locker/goredis does); the cursor names the
// master, so a resharding during a listing may skip or repeat names. A
// driver without driver.Masters (locker/redigo) reaches one server, or a
// Sentinel set-up's master, and List scans that one. Use Inspect for a
// name's holder and waiters.
//
// On a Redlock Locker it visits the masters in turn, so a lock held on a
// majority is listed once per master that has it.
//
// It returns an error matching ErrUnavailable when Redis failed (a master
// that fails fails the page: retry with the same cursor) and ErrBadOption
// for a cursor it did not make.
func (l *Locker) List(ctx context.Context, prefix, cursor string) (names []string, next string, err error) {
	return admin.List(ctx, l.admin(), l.o.bounds(), l.o.prefix, prefix, cursor)
}
