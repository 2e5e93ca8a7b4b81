package admin

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// nameOf returns the lock name of key, the main key of a lock of any kind
// under a prefix of prefixLen bytes: prefix + "{" + name + "}", then ""
// (mutex), ":s" (semaphore) or ":rw" (read/write).
func nameOf(key string, prefixLen int) (string, bool) {
	for _, suffix := range [...]string{"}", "}:s", "}:rw"} {
		if strings.HasSuffix(key, suffix) && len(key) >= prefixLen+1+len(suffix) {
			return key[prefixLen+1 : len(key)-len(suffix)], true
		}
	}
	return "", false
}

// parseCursor reads List's cursor: "" or "master:scan".
func parseCursor(c string) (master int, scan string, err error) {
	if c == "" {
		return 0, "0", nil
	}
	m, s, ok := strings.Cut(c, ":")
	master, err1 := strconv.Atoi(m)
	_, err2 := strconv.ParseUint(s, 10, 64)
	if !ok || err1 != nil || err2 != nil || master < 0 {
		return 0, "", fmt.Errorf("%w: List: cursor %q was not returned by List", lockerr.ErrBadOption, c)
	}
	return master, s, nil
}

// globEscape escapes s for a SCAN MATCH pattern.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// listCount is the COUNT hint of each SCAN step: how many keys Redis looks
// at per List call on one master (it may return fewer or a few more).
const listCount = 1000

// List returns one page of the names of the locks whose name starts with
// prefix, under the key prefix keyPrefix (see locker.List): one SCAN step
// on the master the cursor names.
func List(ctx context.Context, ad backend.Admin, bounds callctx.Bounds, keyPrefix, prefix, cursor string) (names []string, next string, err error) {
	// Lock keys end in "}" (a mutex), "}:s" (a semaphore's permits) or
	// "}:rw" (a read/write lock's holders); the last byte's class keeps
	// Redlock's last tokens (":f"), queues (":q") and channels out of the
	// reply, and nameOf drops a semaphore's or read/write lock's records
	// hash (":s:w", ":rw:w").
	pattern := globEscape(keyPrefix) + "{" + globEscape(prefix) + "*[}sw]"
	keys, next, err := scan(ctx, ad, bounds, pattern, cursor)
	if err != nil {
		return nil, "", err
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if name, ok := nameOf(k, len(keyPrefix)); ok && !seen[name] {
			// A name held as two kinds at once is listed once a page.
			seen[name] = true
			names = append(names, name)
		}
	}
	return names, next, nil
}

// scan runs one SCAN step for the keys matching pattern on the master the
// cursor ("" or "master:scan") names, and returns them with the cursor of
// the next step ("" when every master is done).
func scan(ctx context.Context, ad backend.Admin, bounds callctx.Bounds, pattern, cursor string) (keys []string, next string, err error) {
	master, step, err := parseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	cctx, cancel := bounds.Call(ctx)
	defer cancel()
	masters, err := ad.Masters(cctx)
	if err != nil {
		return nil, "", err
	}
	if master >= len(masters) {
		return nil, "", nil // the cluster shrank: nothing left to visit
	}
	var args protocol.Args
	args[protocol.ArgCursor] = step
	args[protocol.ArgPattern] = pattern
	args[protocol.ArgCount] = listCount
	v, err := protocol.List.Eval(cctx, masters[master], driver.Keys{}, &args)
	if err != nil {
		return nil, "", lockerr.Unavailable(err)
	}
	a, _ := v.([]any)
	if len(a) == 0 {
		return nil, "", lockerr.Unavailable(fmt.Errorf("locker: list: unexpected reply %v", v))
	}
	keys = make([]string, 0, len(a)-1)
	for _, k := range a[1:] {
		keys = append(keys, str(k))
	}
	switch {
	case str(a[0]) != "0":
		next = strconv.Itoa(master) + ":" + str(a[0])
	case master+1 < len(masters):
		next = strconv.Itoa(master+1) + ":0"
	}
	return keys, next, nil
}
