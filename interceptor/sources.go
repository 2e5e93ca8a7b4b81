package interceptor

import (
	"context"
	"fmt"
	"github.com/locktag/locktag/interceptor/internal/rpccore"
	"maps"
	"slices"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Call is one RPC as key sources see it, before the handler runs. A source
// registered with WithSource reads it to produce a placeholder's value.
type Call struct {
	// Ctx is the call's incoming context: metadata, peer, deadline and every
	// value the interceptors before this one added (an authenticated user,
	// a tenant).
	Ctx context.Context
	// FullMethod is the method's full name, "/shop.v1.Inventory/Reserve".
	FullMethod string
	// Request is the request message of a unary call; nil for a stream,
	// whose first message is read by the handler.
	Request proto.Message
}

// callRequest is the request message a {req...} placeholder reads.
func callRequest(c *Call) proto.Message { return c.Request }

// builtinSources are the sources every rule can use.
var builtinSources = []string{"req", "md", "method"}

// sourcesFor returns the sources a rule for m binds against: the built-in
// ones, closed over m, and the application's.
func sourcesFor(m rpccore.Method, extra keyexpr.Sources[*Call]) keyexpr.Sources[*Call] {
	src := make(keyexpr.Sources[*Call], len(extra)+len(builtinSources))
	for name, s := range extra {
		src[name] = s
	}
	src["req"] = func(path string) (keyexpr.Getter[*Call], error) { return rpccore.BindReq(m, path, callRequest) }
	src["md"] = bindMD
	src["method"] = bindMethod
	return src
}

// bindMethod binds {method} to the call's full method name.
func bindMethod(path string) (keyexpr.Getter[*Call], error) {
	if path != "" {
		return nil, fmt.Errorf("%w: {method} takes no path (got {method.%s})", ErrBadSource, path)
	}
	return func(c *Call) (string, error) { return c.FullMethod, nil }, nil
}

// bindMD binds {md.key} to the first value of the incoming metadata key,
// lower-cased at registration as gRPC stores it.
func bindMD(path string) (keyexpr.Getter[*Call], error) {
	key := strings.ToLower(path)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return nil, fmt.Errorf("%w: {md.%s}: %q is not a valid metadata key (want [a-z0-9-_.])", ErrBadSource, path, key)
		}
	}
	return func(c *Call) (string, error) {
		if v := metadata.ValueFromIncomingContext(c.Ctx, key); len(v) > 0 {
			return v[0], nil
		}
		return "", nil
	}, nil
}

// ContextSource returns a source whose values come from the call's context,
// for values an earlier interceptor stored there. fields maps each path the
// source serves to a function that reads it; any other path is a
// registration error, and a function returning "" makes the value missing
// (InvalidArgument). With fields{"user": ...}, a rule can use {ctx.user}:
// docs/keys.md#values-an-earlier-middleware-stored has an example.
func ContextSource(fields map[string]func(ctx context.Context) string) keyexpr.Source[*Call] {
	fields = maps.Clone(fields)
	return func(path string) (keyexpr.Getter[*Call], error) {
		get := fields[path]
		if get == nil {
			names := make([]string, 0, len(fields))
			for name := range fields {
				names = append(names, name)
			}
			slices.Sort(names)
			return nil, fmt.Errorf("%w: unknown path %q (known: %s)", ErrBadSource, path, strings.Join(names, ", "))
		}
		return func(c *Call) (string, error) { return get(c.Ctx), nil }, nil
	}
}
