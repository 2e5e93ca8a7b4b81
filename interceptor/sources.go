package interceptor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
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

// methodInfo is what binding a rule's sources needs to know about its method.
type methodInfo struct {
	fullMethod string
	desc       protoreflect.MethodDescriptor
	streaming  bool
}

// isStreaming reports whether md is client-, server- or bidi-streaming: the
// kinds a StreamServerInterceptor sees.
func isStreaming(md protoreflect.MethodDescriptor) bool {
	return md.IsStreamingClient() || md.IsStreamingServer()
}

// builtinSources are the sources every rule can use.
var builtinSources = []string{"req", "md", "method"}

// sourcesFor returns the sources a rule for m binds against: the built-in
// ones, closed over m, and the application's.
func sourcesFor(m methodInfo, extra keyexpr.Sources[*Call]) keyexpr.Sources[*Call] {
	src := make(keyexpr.Sources[*Call], len(extra)+len(builtinSources))
	for name, s := range extra {
		src[name] = s
	}
	src["req"] = func(path string) (keyexpr.Getter[*Call], error) { return bindReq(m, path) }
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

// bindReq binds {req.a.b} to a field of the method's request message, found
// by proto field names now, so a field the message lacks is a registration
// error.
func bindReq(m methodInfo, path string) (keyexpr.Getter[*Call], error) {
	if m.streaming {
		return nil, fmt.Errorf("%w: {req.%s} in a rule for streaming method %s: the handler reads the stream's messages after the lock is taken; use md, method or an application source", ErrReqInStream, path, m.fullMethod)
	}
	if path == "" {
		return nil, fmt.Errorf("%w: {req} needs a field path, e.g. {req.sku}", ErrBadField)
	}
	root := m.desc.Input()
	fields := make([]protoreflect.FieldDescriptor, 0, strings.Count(path, ".")+1)
	md := root
	for i, name := range strings.Split(path, ".") {
		if md == nil {
			return nil, fmt.Errorf("%w: {req.%s}: %s is not a message", ErrBadField, path, fields[i-1].FullName())
		}
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return nil, fmt.Errorf("%w: {req.%s}: %s has no field %q (fields: %s)", ErrBadField, path, md.FullName(), name, fieldNames(md))
		}
		if fd.IsList() || fd.IsMap() {
			return nil, fmt.Errorf("%w: {req.%s}: %s is repeated or a map; a lock key needs one value", ErrBadField, path, fd.FullName())
		}
		fields = append(fields, fd)
		md = fd.Message()
	}
	leaf := fields[len(fields)-1]
	switch leaf.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nil, fmt.Errorf("%w: {req.%s}: %s is a message; name one of its scalar fields", ErrBadField, path, leaf.FullName())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return nil, fmt.Errorf("%w: {req.%s}: %s is a floating-point number, which does not name a lock well (0 and -0 differ)", ErrBadField, path, leaf.FullName())
	}
	g := &reqGetter{root: root, fields: fields}
	return g.get, nil
}

// reqGetter reads one bound request field path.
type reqGetter struct {
	root   protoreflect.MessageDescriptor
	fields []protoreflect.FieldDescriptor
}

// get returns the field's value, or "" when it or a message on its path is
// not set (for proto3 fields without presence, also when it holds the zero
// value).
func (g *reqGetter) get(c *Call) (string, error) {
	if c.Request == nil {
		return "", nil
	}
	m := c.Request.ProtoReflect()
	// Generated messages share the registered descriptor; anything else
	// (dynamicpb) is read by field number.
	sameDesc := m.Descriptor() == g.root
	if !sameDesc && m.Descriptor().FullName() != g.root.FullName() {
		return "", fmt.Errorf("%w: request is %s, the rule was bound to %s", ErrBadField, m.Descriptor().FullName(), g.root.FullName())
	}
	var v protoreflect.Value
	for i, fd := range g.fields {
		if !sameDesc {
			if fd = m.Descriptor().Fields().ByNumber(fd.Number()); fd == nil {
				return "", nil
			}
		}
		if !m.Has(fd) {
			return "", nil
		}
		v = m.Get(fd)
		if i < len(g.fields)-1 {
			m = v.Message()
		}
	}
	return formatValue(g.fields[len(g.fields)-1].Kind(), v), nil
}

// formatValue renders a scalar field value: strings and bytes as they are,
// integers in decimal, bools as true/false, enums by number.
func formatValue(k protoreflect.Kind, v protoreflect.Value) string {
	switch k {
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return string(v.Bytes())
	case protoreflect.BoolKind:
		return strconv.FormatBool(v.Bool())
	case protoreflect.EnumKind:
		return strconv.FormatInt(int64(v.Enum()), 10)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	}
	return "" // not reached: other kinds are rejected by bindReq
}

func fieldNames(md protoreflect.MessageDescriptor) string {
	fs := md.Fields()
	names := make([]string, 0, fs.Len())
	for i := range fs.Len() {
		names = append(names, string(fs.Get(i).Name()))
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ContextSource returns a source whose values come from the call's context,
// for values an earlier interceptor stored there. fields maps each path the
// source serves to a function that reads it; a placeholder naming any other
// path is a registration error. A function returning "" makes the value
// missing (InvalidArgument).
//
// With an authentication interceptor that stores the user in the context:
//
//	interceptor.WithSource("ctx", interceptor.ContextSource(map[string]func(context.Context) string{
//		"user": func(ctx context.Context) string { return auth.UserFrom(ctx).ID },
//	}))
//
// a rule can use {ctx.user}.
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
