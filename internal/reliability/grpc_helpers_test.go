package reliability

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The test service, built from a descriptor at run time (the interceptor's
// generated test messages live in its internal package):
//
//	message Req  { string s = 1; bytes b = 2; bytes blob = 3; }
//	message Resp { int64 token = 1; string key = 2; }
//	service Abuse { rpc Str(Req) returns (Resp); rpc Bytes(Req) ...;
//	                rpc MD(Req) ...; rpc Pay(Req) ...; }
const (
	methodStr   = "/reliability.v1.Abuse/Str"
	methodBytes = "/reliability.v1.Abuse/Bytes"
	methodMD    = "/reliability.v1.Abuse/MD"
	methodPay   = "/reliability.v1.Abuse/Pay"
)

var (
	abuseFiles = new(protoregistry.Files)
	abuseTypes = new(protoregistry.Types)
	reqDesc    protoreflect.MessageDescriptor
	respDesc   protoreflect.MessageDescriptor
)

func init() {
	field := func(name string, n int32, typ descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), JsonName: proto.String(name),
			Type: typ.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
	}
	method := func(name string) *descriptorpb.MethodDescriptorProto {
		return &descriptorpb.MethodDescriptorProto{Name: proto.String(name),
			InputType: proto.String(".reliability.v1.Req"), OutputType: proto.String(".reliability.v1.Resp")}
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("reliability/abuse.proto"), Package: proto.String("reliability.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Req"), Field: []*descriptorpb.FieldDescriptorProto{
				field("s", 1, descriptorpb.FieldDescriptorProto_TYPE_STRING),
				field("b", 2, descriptorpb.FieldDescriptorProto_TYPE_BYTES),
				field("blob", 3, descriptorpb.FieldDescriptorProto_TYPE_BYTES),
			}},
			{Name: proto.String("Resp"), Field: []*descriptorpb.FieldDescriptorProto{
				field("token", 1, descriptorpb.FieldDescriptorProto_TYPE_INT64),
				field("key", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING),
			}},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Abuse"),
			Method: []*descriptorpb.MethodDescriptorProto{method("Str"), method("Bytes"), method("MD"), method("Pay")}}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		panic(err)
	}
	if err := abuseFiles.RegisterFile(fd); err != nil {
		panic(err)
	}
	reqDesc = fd.Messages().ByName("Req")
	respDesc = fd.Messages().ByName("Resp")
	if err := abuseTypes.RegisterMessage(dynamicpb.NewMessageType(respDesc)); err != nil {
		panic(err)
	}
}

// newReq returns a Req with s, b and blob set (empty ones left unset).
func newReq(s string, b, blob []byte) *dynamicpb.Message {
	m := dynamicpb.NewMessage(reqDesc)
	if s != "" {
		m.Set(reqDesc.Fields().ByName("s"), protoreflect.ValueOfString(s))
	}
	if len(b) > 0 {
		m.Set(reqDesc.Fields().ByName("b"), protoreflect.ValueOfBytes(b))
	}
	if len(blob) > 0 {
		m.Set(reqDesc.Fields().ByName("blob"), protoreflect.ValueOfBytes(blob))
	}
	return m
}

// newResp returns a Resp carrying the lease's token and lock name.
func newResp(token int64, key string) *dynamicpb.Message {
	m := dynamicpb.NewMessage(respDesc)
	m.Set(respDesc.Fields().ByName("token"), protoreflect.ValueOfInt64(token))
	m.Set(respDesc.Fields().ByName("key"), protoreflect.ValueOfString(key))
	return m
}

// abuseHandler answers every method; handle decides the response.
type abuseHandler func(ctx context.Context, method string, req *dynamicpb.Message) (any, error)

// serveGRPC serves the Abuse service on a loopback TCP port behind the
// given server options, and returns a client connection.
func serveGRPC(t testing.TB, h abuseHandler, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	desc := grpc.ServiceDesc{ServiceName: "reliability.v1.Abuse", HandlerType: (*any)(nil)}
	for _, name := range []string{"Str", "Bytes", "MD", "Pay"} {
		full := "/reliability.v1.Abuse/" + name
		desc.Methods = append(desc.Methods, grpc.MethodDesc{MethodName: name,
			Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				in := dynamicpb.NewMessage(reqDesc)
				if err := dec(in); err != nil {
					return nil, err
				}
				handler := func(ctx context.Context, req any) (any, error) { return h(ctx, full, req.(*dynamicpb.Message)) }
				if ic == nil {
					return handler(ctx, in)
				}
				return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, handler)
			}})
	}
	s := grpc.NewServer(opts...)
	s.RegisterService(&desc, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// invoke calls method with req and returns the response.
func invoke(ctx context.Context, conn *grpc.ClientConn, method string, req proto.Message) (*dynamicpb.Message, error) {
	resp := dynamicpb.NewMessage(respDesc)
	err := conn.Invoke(ctx, method, req, resp)
	return resp, err
}
