package locker

import (
	"github.com/locktag/locktag/locker/internal/names"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// holder returns the names of key's mutex and a new owner token for it.
func (l *Locker) holder(key string) (names.Names, string) { return l.sh.Layout.Mutex(key, nil) }

// kindHolder returns the names of key's lock of the kind whose keys end
// in suffix and a new owner token.
func (l *Locker) kindHolder(key, suffix string, sc *scripts.Set, arg any) (names.Names, string) {
	return l.sh.Layout.Kind(key, suffix, sc, arg, nil)
}
