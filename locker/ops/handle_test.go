package ops

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/fips140"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"testing"
)

// TestHandleLayout: a redacted handle is nonce || AES-256-GCM(name) under
// SHA-256(WithHandleKey), so servers of one fleet that share the key read
// each other's handles: one sealed by hand with a chosen nonce (the form
// every release has written) is read back, and one of ours opens by hand.
func TestHandleLayout(t *testing.T) {
	key := []byte("fleet handle key")
	h, err := newHandles(true, key)
	if err != nil {
		t.Fatal(err)
	}
	k := sha256.Sum256(key)
	b, err := aes.NewCipher(k[:])
	if err != nil {
		t.Fatal(err)
	}
	var byHand string
	var opened []byte
	// GCM with a nonce chosen by the caller is what FIPS 140-only mode
	// refuses; the test builds the layout by hand to pin it.
	fips140.WithoutEnforcement(func() {
		g, err := cipher.NewGCM(b)
		if err != nil {
			t.Fatal(err)
		}
		nonce := make([]byte, g.NonceSize())
		rand.Read(nonce)
		byHand = "e." + b64.EncodeToString(g.Seal(nonce, nonce, []byte("orders:42"), []byte("locktag-ops")))
		raw, err := b64.DecodeString(h.make("orders:7")[2:])
		if err != nil {
			t.Fatal(err)
		}
		opened, err = g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte("locktag-ops"))
		if err != nil {
			t.Fatalf("a handle of ours does not open as nonce || sealed name: %v", err)
		}
	})
	if got, err := h.name(byHand); err != nil || got != "orders:42" {
		t.Fatalf("a handle sealed by hand: got %q, %v", got, err)
	}
	if string(opened) != "orders:7" {
		t.Fatalf("a handle of ours opened by hand: %q", opened)
	}
	for _, bad := range []string{"e.", "e.AAAA", byHand[:len(byHand)-2]} {
		if _, err := h.name(bad); !errors.Is(err, ErrBadHandle) {
			t.Errorf("handle %q: got %v, want ErrBadHandle", bad, err)
		}
	}
}
