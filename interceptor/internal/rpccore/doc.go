// Package rpccore is what locktag's RPC adapters share: the gRPC one
// (package interceptor) and the connect-go one (package
// interceptor/connectrpc). It holds everything about RPC that is not about
// a framework — the rules from Go maps and from the locktag.v1 proto
// options, compiled into one lock guard per method; the {req...} source
// that reads a request message's fields; the status code, message and
// details of each guard.Kind; the stored-response format of the
// idempotency guard; and the options both adapters take — so each adapter
// only reads its framework's call and hands these pieces its reply. It
// imports no RPC framework.
//
// The source is interceptor/internal/rpccore, in the gRPC adapter's
// module; the connect adapter's module holds a generated copy
// (.ci/copies.sh), so that neither imports another module's internals.
package rpccore
