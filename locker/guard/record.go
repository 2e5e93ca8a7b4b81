package guard

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/locktag/locktag/locker"
)

// A stored record is
//
//	format(2 bytes) flags(1 byte) uvarint(status) payload
//
// format names the adapter's payload encoding ("H1": HTTP, "G1": gRPC);
// flags bit 0 set: the answer was over the cap and is not stored (no
// payload). The Gin and gRPC adapters' records from before the guard layer
// have exactly this form, so they stay readable.
const flagNotStored = 1

func encodeRecord(format string, status int, payload []byte, notStored bool) []byte {
	b := make([]byte, 0, len(format)+1+binary.MaxVarintLen64+len(payload))
	b = append(b, format...)
	if notStored {
		b = append(b, flagNotStored)
		return binary.AppendUvarint(b, uint64(status))
	}
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(status))
	return append(b, payload...)
}

// decodeRecord reads a record of format; notStored records have no payload.
func decodeRecord(format string, b []byte) (r *Record, notStored bool, err error) {
	if len(b) < len(format)+2 || string(b[:len(format)]) != format {
		return nil, false, ErrUnreadableRecord
	}
	flags := b[len(format)]
	st, n := binary.Uvarint(b[len(format)+1:])
	if n <= 0 || st > 1<<20 {
		return nil, false, ErrUnreadableRecord
	}
	r = &Record{Status: int(st)}
	if flags&flagNotStored != 0 {
		return r, true, nil
	}
	r.Payload = b[len(format)+1+n:]
	return r, false, nil
}

// Fingerprint names a way of summing up a request for its idempotency
// record: two requests with one key are the same request when their
// fingerprints are equal. A guard writes one kind (WithFingerprint) and
// honours a record of either.
type Fingerprint uint8

const (
	// Fingerprint1 covers Request.Parts and the body. For HTTP: the
	// method, route, path as sent, query and body. Every release since
	// v1.0 writes and reads it.
	Fingerprint1 Fingerprint = 1
	// Fingerprint2 covers Request.Canonical and the body. For HTTP: the
	// method, route, the path in canonical form (equal for every adapter
	// and every escaping of the same path), the query, and the
	// representation headers Content-Type and Content-Encoding, so that a
	// body sent as JSON and the same bytes sent as a form are two
	// requests. A request without Canonical has only Fingerprint1.
	Fingerprint2 Fingerprint = 2
)

// fp2Domain begins the parts Fingerprint2 covers, so that no request's
// Fingerprint2 equals another's Fingerprint1.
const fp2Domain = "\x00locktag fingerprint 2"

// fingerprints returns q's fingerprint of kind f over body, and a function
// that gives the other kind ("" where q has only one).
func (q Request) fingerprints(f Fingerprint, body []byte) (string, func() string) {
	if q.Canonical == nil {
		return fingerprint(q.Parts, body), func() string { return "" }
	}
	one := func() string { return fingerprint(q.Parts, body) }
	two := func() string { return fingerprint(append([]string{fp2Domain}, q.Canonical...), body) }
	if f == Fingerprint2 {
		return two(), one
	}
	return one(), two
}

// fingerprint sums up what makes two requests the same request: the parts,
// each prefixed with its length, then the body.
func fingerprint(parts []string, body []byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, s := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	h.Write(body)
	return string(h.Sum(nil))
}

// EncodeRecord returns the record Run stores for answer a in format: its
// Status and Payload, or, for an Oversize answer, its Status marked as not
// stored. With Identity it lets a tool write the record of a first request
// itself (Claim.Complete), as the test kit locker/locktest does; Run reads
// it back as its own.
func EncodeRecord(format string, a Answer) []byte {
	return encodeRecord(format, a.Status, a.Payload, a.Oversize)
}

// Identity returns what Run claims for q from a caller of scope: the name
// of its record (locker.IdempotencyName over q.Route, scope and the key
// of q.Keys, parsed by ParseIdempotencyKey without a length cap) and the
// Fingerprint1 of q.Parts and body (the kind a guard writes by default).
// q.Body is not called: body is the request's body. Errors: ErrIdempotencyKeyMissing, errors wrapping
// ErrBadIdempotencyKey.
func (q Request) Identity(scope string, body []byte) (name, fp string, err error) {
	switch {
	case len(q.Keys) == 0:
		return "", "", ErrIdempotencyKeyMissing
	case len(q.Keys) > 1:
		return "", "", fmt.Errorf("%w: sent more than once", ErrBadIdempotencyKey)
	}
	key, err := ParseIdempotencyKey(q.Keys[0], math.MaxInt)
	if err != nil {
		return "", "", err
	}
	return locker.IdempotencyName(q.Route, scope, key), fingerprint(q.Parts, body), nil
}
