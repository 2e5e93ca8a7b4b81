package ops

import (
	"crypto/fips140"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/locktag/locktag/locker"
)

// Option configures NewHandler. An invalid value makes NewHandler return
// an error wrapping locker.ErrBadOption that names the option.
type Option func(*options)

type options struct {
	authorize func(r *http.Request, a Action, name string) error
	logger    *slog.Logger // nil: slog.Default() when a record is logged
	identity  func(r *http.Request) string
	redact    func(name string) string // nil: names shown as they are
	handleKey []byte                   // nil: a random key per handler
	pageSize  int
	refresh   time.Duration
	errs      []error
}

var defaults = options{
	identity: func(r *http.Request) string { return r.RemoteAddr },
	pageSize: 100,
	refresh:  5 * time.Second,
}

// evaluateOptions applies opts to a copy of the defaults, collecting
// every bad value.
func evaluateOptions(opts []Option) (options, error) {
	o := defaults
	o.errs = nil
	for _, opt := range opts {
		opt(&o)
	}
	return o, errors.Join(o.errs...)
}

func (o *options) bad(option string, value any, why string) {
	o.errs = append(o.errs, fmt.Errorf("%w: ops.%s(%v): %s", locker.ErrBadOption, option, value, why))
}

// WithAuthorizer sets who may do what. authorize is called for every
// request: with View and "" for the page and the list, with View and the
// lock's name for one lock's detail, and with Release and the lock's name
// (never the redacted one) for a force-release; the page also asks it
// whether to show each row's release button. A nil error allows; an error
// matching ErrUnauthenticated answers 401, any other error 403 (the
// error's text is not sent). authorize must not be nil. The default,
// without this option: View is allowed to everyone who reaches the handler
// and Release to nobody.
func WithAuthorizer(authorize func(r *http.Request, a Action, name string) error) Option {
	return func(o *options) {
		if authorize == nil {
			o.bad("WithAuthorizer", "nil", "must not be nil (leave the option out for the read-only default)")
			return
		}
		o.authorize = authorize
	}
}

// WithLogger sets where force-releases are logged (message "locktag:
// force-release", at Warn when the lock was released, Info when it was
// not held, Error when Redis failed). l must not be nil. The default is
// slog.Default() at the time of each record.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.bad("WithLogger", "nil", "must not be nil")
			return
		}
		o.logger = l
	}
}

// WithIdentity sets how the audit log names who asked for a force-release
// (attribute "who"): e.g. the user your authentication put in the
// request's context. who must not be nil. The default is the request's
// RemoteAddr.
func WithIdentity(who func(r *http.Request) string) Option {
	return func(o *options) {
		if who == nil {
			o.bad("WithIdentity", "nil", "must not be nil")
			return
		}
		o.identity = who
	}
}

// WithRedaction replaces every lock name on the page and in the JSON with
// redact(name) (see HashNames), and gives each row an opaque handle
// instead of its name, for the detail and release calls. The names the
// operator types (the prefix filter, ?name=) are still plain names.
// redact must not be nil. The default shows names as they are.
func WithRedaction(redact func(name string) string) Option {
	return func(o *options) {
		if redact == nil {
			o.bad("WithRedaction", "nil", "must not be nil")
			return
		}
		o.redact = redact
	}
}

// WithHandleKey sets the key redacted rows' handles are encrypted with
// (AES-256-GCM under SHA-256 of key). Behind a load balancer give every
// replica the same key, so a handle from one replica's page works on
// another's. The default is a random key per handler: handles then work
// only on the process that served the page (a release elsewhere answers
// 400, and changes nothing). Unused without WithRedaction. key must not be
// empty: everyone knows the empty key.
func WithHandleKey(key []byte) Option {
	return func(o *options) {
		if len(key) == 0 {
			o.bad("WithHandleKey", "empty key", "must not be empty")
			return
		}
		o.handleKey = key
	}
}

// WithPageSize sets how many lock names a page (the HTML page or one
// api/locks call) collects before it stops listing (n > 0); the page then
// ends and its next cursor goes on. Each List step is one SCAN step that
// may bring more names than that (up to about 1000 per step): all of them
// are shown, since the next cursor would not list them again. The default
// is 100.
func WithPageSize(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.bad("WithPageSize", n, "must be at least 1")
			return
		}
		o.pageSize = n
	}
}

// WithRefresh sets how often the HTML page reloads its rows (d > 0). The
// default is 5s; the lease countdowns tick every 100ms between reloads.
func WithRefresh(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.bad("WithRefresh", d, "must be positive")
			return
		}
		o.refresh = d
	}
}

// HashNames returns a redaction for WithRedaction that keeps a name's
// first segment, up to and including its first ':' (e.g. "order:"), and
// replaces the rest with 16 hex digits of HMAC-SHA256(secret, name); a
// name without ':' is hashed whole. The same name hashes the same on every
// refresh and replica. Give it a secret of at least 14 bytes (112 bits):
// in FIPS 140-only mode (GODEBUG=fips140=only) HashNames panics at once on
// a shorter one. See docs/operations.md#the-ops-page.
func HashNames(secret []byte) func(name string) string {
	if len(secret) < minHMACKey && fips140.Enforced() {
		panic(fmt.Sprintf("ops: HashNames: a secret of %d bytes; FIPS 140-only mode needs at least %d", len(secret), minHMACKey))
	}
	key := append([]byte(nil), secret...)
	return func(name string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(name))
		sum := hex.EncodeToString(m.Sum(nil)[:8])
		if i := strings.IndexByte(name, ':'); i >= 0 {
			return name[:i+1] + "#" + sum
		}
		return "#" + sum
	}
}

// minHMACKey is the shortest HMAC key FIPS 140-only mode accepts (112 bits).
const minHMACKey = 14
