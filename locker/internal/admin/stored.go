package admin

import (
	"context"
	"strings"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
)

// The kinds of what is stored beside locks (locker.KindIdempotency ...).
const (
	kindIdempotency = "idempotency"
	kindRate        = "rate"
)

// Stored is one name ListStored found, with the kind of what is stored
// under it (locker.Stored).
type Stored struct {
	Name string
	Kind string
}

// storedSuffixes are the keys ListStored reports, by what follows a
// name's hash tag: each kind's main key. Their last bytes differ, so a
// key ends in at most one of them; the rest of a name's keys (queues,
// records hashes, Redlock's last tokens) end otherwise.
var storedSuffixes = [...]struct{ suffix, kind string }{
	{"}", kindMutex},
	{"}:s", kindSemaphore},
	{"}:rw", kindRW},
	{"}:r", kindIdempotency},
	{"}:rate", kindRate},
}

// ListStored returns one page of what is stored under the key prefix
// keyPrefix for names that start with prefix: locks of each kind,
// idempotency records and rate keys (see locker.ListStored). Its cursor
// is List's: one SCAN step on the master the cursor names.
func ListStored(ctx context.Context, ad backend.Admin, bounds callctx.Bounds, keyPrefix, prefix, cursor string) ([]Stored, string, error) {
	// The last byte's class is each main key's last byte (storedSuffixes),
	// which keeps queues (":q"), Redlock's last tokens (":f") and the
	// records' channels out of the reply.
	pattern := globEscape(keyPrefix) + "{" + globEscape(prefix) + "*[}swre]"
	keys, next, err := scan(ctx, ad, bounds, pattern, cursor)
	if err != nil {
		return nil, "", err
	}
	var out []Stored
	seen := make(map[Stored]bool, len(keys))
	for _, k := range keys {
		s, ok := storedOf(k, len(keyPrefix))
		if ok && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, next, nil
}

// storedOf returns the name and kind of key, a key under a prefix of
// prefixLen bytes; false for a key that is not a kind's main key (a
// records hash ":s:w", ":rw:w"), or for an idempotency record's waiters
// (":rw" of a record's name, a set beside the record ":r").
func storedOf(key string, prefixLen int) (Stored, bool) {
	for _, s := range storedSuffixes {
		if !strings.HasSuffix(key, s.suffix) || len(key) < prefixLen+1+len(s.suffix) {
			continue
		}
		name := key[prefixLen+1 : len(key)-len(s.suffix)]
		if s.kind == kindRW && isRecordName(name) {
			return Stored{}, false
		}
		return Stored{Name: name, Kind: s.kind}, true
	}
	return Stored{}, false
}

// isRecordName reports whether name has the shape of an idempotency
// record's name (records.Name): "idem:" and 43 characters of base64url.
// Its ":rw" key is the record's waiters, not a read/write lock.
func isRecordName(name string) bool {
	const head, body = "idem:", 43
	if len(name) != len(head)+body || !strings.HasPrefix(name, head) {
		return false
	}
	for _, c := range name[len(head):] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
