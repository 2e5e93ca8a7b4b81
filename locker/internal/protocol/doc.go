// Package scripts holds every Lua script the locker runs: the fragments
// under lua/ (embedded), the scripts assembled from them, their argument
// modes and reply statuses, and the registry that names each one
// (ByName). testdata/scripts/<name>.lua is each script exactly as Redis
// runs it; TestScriptsGolden keeps the two equal:
//
//	go test ./locker/internal/protocol -run TestScriptsGolden -args -update
//
// Layouts defines each script's keys, arguments and replies, once: each
// script opens with a prologue made from it that names its keys and
// arguments (prologue.go; the fragments read those names, never a
// position), the Go callers name their arguments by it (Args, Call, and
// the Arg constants generated in args_gen.go), docs/protocol.md's tables
// are generated from it, and testdata/protocol-v1.txt freezes it:
//
//	go generate ./locker/internal/protocol
//
// go generate also rewrites locker/driver/shipped.go, the SHA1 of every
// registered script, which driver.NewScript looks up so that no SHA-1 is
// computed in the process (FIPS 140-only mode refuses SHA-1);
// TestShippedHashes fails when it is stale.
//
// The package is a leaf: it imports only the driver seam.
package protocol

//go:generate go test -run TestArgsGenerated -args -update
//go:generate go test -run TestProtocolDoc -args -update
//go:generate go test -run TestShippedHashes -args -update
