package driver

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script the core runs on Redis. Drivers run it by SHA1
// (EVALSHA) and fall back to EVAL when the server answers NOSCRIPT, so a
// SCRIPT FLUSH or a restarted server costs one extra round trip, never an
// error. A Script is immutable and safe for concurrent use.
type Script struct {
	src  string
	hash string
	// hash and src as interface values, made once: boxing a string into
	// an argument list allocates on every call otherwise.
	hashArg, srcArg any
}

// NewScript returns the Script for the Lua source src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	h := hex.EncodeToString(sum[:])
	return &Script{src: src, hash: h, hashArg: h, srcArg: src}
}

// Source is the script's Lua text.
func (s *Script) Source() string { return s.src }

// Hash is the hex SHA1 of the source, as EVALSHA wants it.
func (s *Script) Hash() string { return s.hash }

// HashArg is Hash as an interface value made once, for drivers that pass
// commands as []any: putting it in an argument list allocates nothing.
func (s *Script) HashArg() any { return s.hashArg }

// SourceArg is Source as an interface value made once (see HashArg).
func (s *Script) SourceArg() any { return s.srcArg }
