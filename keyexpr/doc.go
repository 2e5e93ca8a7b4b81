// Package keyexpr is locktag's tag and key-template language: it parses lock
// tags, compiles key templates and evaluates them against requests. It has no
// dependencies beyond the standard library (and the leaf of this module that
// holds locker.ErrBadOption) and knows nothing of Gin, gRPC or Redis; the
// middleware and interceptor packages supply the request sources and the locker
// supplies the Redis key layout.
//
// # Tags
//
// A lock tag reads like a Go struct tag:
//
//	key:"order:{path.id}" expire:"30s" wait:"2s"
//
// ParseTag turns it into a Spec at registration time; every mistake — unknown
// or duplicate fields, bad quoting, bad durations, a missing key, a malformed
// template — is reported there, with the byte position, and never at request
// time.
//
// # Templates and keys
//
// A template is literal text with {source.path} or {source} placeholders;
// "{{" and "}}" are literal braces. Compile checks the syntax. Bind then binds
// each placeholder to a Getter through the transport's Sources (HTTP path,
// query, header, JSON body; gRPC request field, metadata; user-registered
// sources such as {ctx.user}), failing on an unknown source or a path a
// source cannot serve. The resulting Key evaluates a request to a lock name:
//
//	order:{path.id}  with id=42   ->  order:42
//
// The name has no prefix and no hash tag: the locker adds both (by default
// "locktag:{order:42}"), so a tag and a manual lock with the same name are the
// same lock.
//
// Eval allocates only the returned string when values need no escaping, and
// uses no reflection.
//
// # Escaping and injectivity
//
// Values come from clients, so they are escaped: '%', ':', '{', '}', bytes up
// to 0x20, 0x7f and bytes of invalid UTF-8 become %XX (upper-case hex); so does
// the first byte of every literal between two placeholders ("-" in
// "{path.a}-{path.b}"). Compile rejects adjacent placeholders ("{a}{b}") and
// literals between placeholders that start with a letter, a digit, '%' or a
// non-ASCII byte.
//
// Together these rules make every template injective: two different tuples of
// values never give the same name. The name can be split back into values
// from left to right: each escaped value ends at the first occurrence of the
// byte that starts the literal after it (values never contain that byte), the
// last one ends where the known trailing literal begins, and percent-decoding
// is unambiguous because '%' is always escaped. So "a:b"+"c" and "a"+"b:c" in
// "{x.a}:{x.b}" give "a%3Ab:c" and "a:b%3Ac".
//
// A value longer than the cap (WithMaxValueLen, default 256 bytes) is an error
// (ErrValueTooLong), or with WithHashLong(true) is replaced by "%sha256" and its
// 64-digit hex SHA-256. No escaped value contains "%s", and the hashed form
// holds only '%', letters and digits, so hashing keeps the rule (up to SHA-256
// collisions).
//
// An empty value is an error (ErrMissingValue): a lock is never taken on a
// shorter key.
package keyexpr
