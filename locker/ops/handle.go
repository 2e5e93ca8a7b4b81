package ops

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// handles turns lock names into the handles rows carry, and back.
//
// Without redaction a handle is "n." + base64url(name): readable, valid
// on every replica. With redaction it is "e." + base64url(nonce ||
// AES-256-GCM(name)), so the page and the JSON never show the name, and
// only a server with the key can map it back. The key lives only in the
// process (or in WithHandleKey); nothing is stored.
type handles struct {
	aead cipher.AEAD // nil: plain handles
}

func newHandles(redacted bool, key []byte) (*handles, error) {
	if !redacted {
		return &handles{}, nil
	}
	var k [32]byte
	if key == nil {
		if _, err := rand.Read(k[:]); err != nil {
			return nil, err
		}
	} else {
		k = sha256.Sum256(key)
	}
	b, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	// The nonce is random, made by the AEAD and put before the sealed
	// name (the layout of a nonce chosen by hand, so handles keep their
	// form); FIPS 140-only mode allows GCM only so.
	g, err := cipher.NewGCMWithRandomNonce(b)
	if err != nil {
		return nil, err
	}
	return &handles{aead: g}, nil
}

var b64 = base64.RawURLEncoding

// make returns name's handle.
func (h *handles) make(name string) string {
	if h.aead == nil {
		return "n." + b64.EncodeToString([]byte(name))
	}
	return "e." + b64.EncodeToString(h.aead.Seal(nil, nil, []byte(name), []byte("locktag-ops")))
}

// name maps a handle back to its lock name, or fails with ErrBadHandle.
func (h *handles) name(handle string) (string, error) {
	kind, enc, ok := strings.Cut(handle, ".")
	raw, err := b64.DecodeString(enc)
	if !ok || err != nil {
		return "", fmt.Errorf("%w: not a handle", ErrBadHandle)
	}
	var name []byte
	switch {
	case kind == "n" && h.aead == nil:
		name = raw
	case kind == "e" && h.aead != nil:
		if name, err = h.aead.Open(nil, nil, raw, []byte("locktag-ops")); err != nil {
			return "", fmt.Errorf("%w: not made by this server (or under another handle key)", ErrBadHandle)
		}
	default:
		return "", fmt.Errorf("%w: a %q handle on a handler that makes the other kind", ErrBadHandle, kind)
	}
	if len(name) == 0 || len(name) > maxNameBytes {
		return "", fmt.Errorf("%w: empty or too long", ErrBadHandle)
	}
	return string(name), nil
}
