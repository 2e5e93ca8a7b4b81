// Package protocol is the one owner of locktag's Redis protocol
// (docs/protocol.md): the key names of every lock (KeyLayout, Names), each
// script's keys, arguments and replies (Layouts), the Lua fragments under
// lua/ (embedded) and the scripts assembled from them, their modes and
// reply statuses, the registry that names each script (ByName), and
// ProtocolVersion.
//
// Layouts defines each script's keys and arguments once. Each script
// opens with a prologue made from it that names them (prologue.go; the
// fragments read those names, never a position); Go callers set
// arguments by name (Args, indexed by the Arg constants generated in
// args_gen.go) and a Call sends them in the layout's order;
// docs/protocol.md's tables are generated from it; and
// testdata/protocol-v1.txt freezes it for protocol 1.
// testdata/scripts/<name>.lua is each script exactly as Redis runs it.
// go generate rewrites all of these, and locker/driver/shipped.go (the
// SHA1 of every registered script, so that no SHA-1 is computed in the
// process: FIPS 140-only mode refuses it); a test fails on each one that
// is stale:
//
//	go generate ./locker/internal/protocol
//
// The package imports only the driver seam and callctx (a holder's
// storage carries its first call's context).
package protocol

//go:generate go test -run TestArgsGenerated -args -update
//go:generate go test -run TestScriptsGolden -args -update
//go:generate go test -run TestProtocolDoc -args -update
//go:generate go test -run TestShippedHashes -args -update
