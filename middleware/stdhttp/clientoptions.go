package stdhttp

import "net/http"

// RetryOption configures NewRetryTransport.
type RetryOption func(*retrySettings)

type retrySettings struct {
	header  string
	methods []string

	maxBuffered int64 // WithMaxBufferedBody
}

// WithRetryKeyHeader sets the request header that carries the idempotency
// key, as the server's WithKeyHeader does. The default is
// "Idempotency-Key"; "" keeps it.
func WithRetryKeyHeader(name string) RetryOption {
	return func(s *retrySettings) {
		if name != "" {
			s.header = http.CanonicalHeaderKey(name)
		}
	}
}

// WithRetryKeyMethods sets the methods whose requests get a key when the
// caller set none (and so are retried). The default is POST and PATCH;
// none gives no request a key, so only keyed requests the caller made and
// idempotent methods are retried.
func WithRetryKeyMethods(methods ...string) RetryOption {
	return func(s *retrySettings) { s.methods = append([]string(nil), methods...) }
}

// DefaultMaxBufferedBody is how much of an answer to a keyed request
// NewRetryTransport reads into memory by default (WithMaxBufferedBody):
// 1 MiB, the most an idempotency guard stores by default
// (guard.WithMaxResponseBytes), so every answer a retry can get replayed
// fits.
const DefaultMaxBufferedBody = 1 << 20

// WithMaxBufferedBody sets how many bytes of an answer to a keyed request
// NewRetryTransport reads into memory before it returns the response. An
// answer of at most n bytes is read in full (a connection lost in it is
// retried with the same key) and returned from memory, its ContentLength
// set; a longer one is returned as a stream, whose cut is the caller's to
// retry with IdempotencyKeyOf's key. n <= 0 buffers nothing, for keyed
// endpoints that stream. The default is DefaultMaxBufferedBody. Memory and
// streaming: docs/clients.md#answers-nethttp.
func WithMaxBufferedBody(n int64) RetryOption {
	return func(s *retrySettings) { s.maxBuffered = max(n, 0) }
}
