package driver

import (
	"crypto/fips140"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
)

// Script is a Lua script the core runs on Redis. Drivers run it by SHA1
// (EVALSHA) and fall back to EVAL when the server answers NOSCRIPT, so a
// SCRIPT FLUSH or a restarted server costs one extra round trip, never an
// error. A Script is immutable and safe for concurrent use.
//
// The SHA1 is only the name Redis gives a script; it protects nothing.
// The core's own scripts ship theirs (see NewScript), so a program in
// FIPS 140-only mode (GODEBUG=fips140=only), where crypto/sha1 refuses to
// run, computes no SHA-1 for them.
type Script struct {
	src  string
	hash string
	// hash and src as interface values, made once: boxing a string into
	// an argument list allocates on every call otherwise.
	hashArg, srcArg any
}

// NewScript returns the Script for the Lua source src.
//
// The hash of each script the core runs is shipped with the module and
// looked up by the source's SHA-256; any other source's SHA1 is computed.
// In FIPS 140-only mode a source without a shipped hash gets none: Hash
// is empty, which Redis answers with NOSCRIPT, so every call runs by EVAL
// (two round trips, the second carrying the source).
func NewScript(src string) *Script {
	h := scriptSHA1(src)
	return &Script{src: src, hash: h, hashArg: h, srcArg: src}
}

// scriptSHA1 is src's hex SHA1: shipped, computed, or, where FIPS 140-only
// mode forbids SHA-1, empty.
func scriptSHA1(src string) string {
	sum := sha256.Sum256([]byte(src))
	if h, ok := shippedSHA1[hex.EncodeToString(sum[:])]; ok {
		return h
	}
	if fips140.Enforced() {
		return ""
	}
	s1 := sha1.Sum([]byte(src))
	return hex.EncodeToString(s1[:])
}

// Source is the script's Lua text.
func (s *Script) Source() string { return s.src }

// Hash is the hex SHA1 of the source, as EVALSHA wants it; empty for a
// script made in FIPS 140-only mode whose hash is not shipped (see
// NewScript).
func (s *Script) Hash() string { return s.hash }

// HashArg is Hash as an interface value made once, for drivers that pass
// commands as []any: putting it in an argument list allocates nothing.
func (s *Script) HashArg() any { return s.hashArg }

// SourceArg is Source as an interface value made once (see HashArg).
func (s *Script) SourceArg() any { return s.srcArg }
