package rpccore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Method is what binding a rule's sources needs to know about its method.
type Method struct {
	Full      string // "/shop.v1.Inventory/Reserve"
	Desc      protoreflect.MethodDescriptor
	Streaming bool
}

// IsStreaming reports whether md is client-, server- or bidi-streaming.
func IsStreaming(md protoreflect.MethodDescriptor) bool {
	return md.IsStreamingClient() || md.IsStreamingServer()
}

// BindReq binds {req.a.b} to a field of the method's request message, found
// by proto field names now, so a field the message lacks is a registration
// error.
func BindReq[R any](m Method, path string, msg func(R) proto.Message) (keyexpr.Getter[R], error) {
	if m.Streaming {
		return nil, fmt.Errorf("%w: {req.%s} in a rule for streaming method %s: the handler reads the stream's messages after the lock is taken; use md, method or an application source", ErrReqInStream, path, m.Full)
	}
	if path == "" {
		return nil, fmt.Errorf("%w: {req} needs a field path, e.g. {req.sku}", ErrBadField)
	}
	root := m.Desc.Input()
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
	return func(r R) (string, error) { return g.get(msg(r)) }, nil
}

// reqGetter reads one bound request field path.
type reqGetter struct {
	root   protoreflect.MessageDescriptor
	fields []protoreflect.FieldDescriptor
}

// get returns the field's value, or "" when it or a message on its path is
// not set (for proto3 fields without presence, also when it holds the zero
// value).
func (g *reqGetter) get(req proto.Message) (string, error) {
	if req == nil {
		return "", nil
	}
	m := req.ProtoReflect()
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
