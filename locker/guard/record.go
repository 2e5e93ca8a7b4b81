package guard

import (
	"crypto/sha256"
	"encoding/binary"
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
