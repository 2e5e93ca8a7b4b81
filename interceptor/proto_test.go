package interceptor

import (
	"context"
	"errors"
	"testing"

	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/interceptor/locktagv1"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func TestProtoOptionRules(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	restock := func(client testpbgrpc.InventoryClient, sku, itemSku string) (int64, error) {
		resp, err := client.Restock(ctx, &testpb.ReserveRequest{Sku: sku, Item: &testpb.Item{Sku: itemSku}})
		return resp.GetToken(), err
	}

	t.Run("option alone", func(t *testing.T) {
		client := e.serve(t, &inventory{}, nil)
		held := e.hold(t, "restock:s1")
		_, err := restock(client, "", "s1")
		st := wantCode(t, err, codes.Aborted)
		if ei := errorInfo(st); ei == nil || ei.Metadata["lockName"] != "restock" {
			t.Errorf("ErrorInfo = %v, want lockName restock (the option's name)", ei)
		}
		_ = held.Release(ctx)
		if tok, err := restock(client, "", "s1"); err != nil || tok == 0 {
			t.Fatalf("after release: token %d, err %v; want a lease", tok, err)
		}
	})
	t.Run("go rule overrides", func(t *testing.T) {
		client := e.serve(t, &inventory{}, Rules{methodRestock: `key:"other:{req.sku}"`})
		e.hold(t, "restock:s2") // the option's key no longer matters
		if tok, err := restock(client, "s2", "s2"); err != nil || tok == 0 {
			t.Fatalf("token %d, err %v; want the Go rule's lock", tok, err)
		}
		e.hold(t, "other:s2")
		_, err := restock(client, "s2", "s2")
		wantCode(t, err, codes.Aborted)
	})
	t.Run("empty go rule removes", func(t *testing.T) {
		client := e.serve(t, &inventory{}, Rules{methodRestock: ""})
		if tok, err := restock(client, "", "s3"); err != nil || tok != 0 {
			t.Fatalf("token %d, err %v; want no lock", tok, err)
		}
	})
	t.Run("proto options off", func(t *testing.T) {
		client := e.serve(t, &inventory{}, nil, WithProtoOptions(false))
		if tok, err := restock(client, "", "s4"); err != nil || tok != 0 {
			t.Fatalf("token %d, err %v; want no lock", tok, err)
		}
	})
}

// badFiles is a registry with one service whose proto options are given.
func badFiles(t *testing.T, unary, stream *locktagv1.LockRule) *protoregistry.Files {
	t.Helper()
	opts := func(lr *locktagv1.LockRule) *descriptorpb.MethodOptions {
		o := &descriptorpb.MethodOptions{}
		proto.SetExtension(o, locktagv1.E_Lock, lr)
		return o
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("dyn/v1/dyn.proto"),
		Package: proto.String("dyn.v1"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Req"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name: proto.String("id"), JsonName: proto.String("id"), Number: proto.Int32(1),
				Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			}},
		}},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Dyn"),
			Method: []*descriptorpb.MethodDescriptorProto{
				{Name: proto.String("Do"), InputType: proto.String(".dyn.v1.Req"), OutputType: proto.String(".dyn.v1.Req"), Options: opts(unary)},
				{Name: proto.String("Tail"), InputType: proto.String(".dyn.v1.Req"), OutputType: proto.String(".dyn.v1.Req"), Options: opts(stream), ServerStreaming: proto.Bool(true)},
			},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(fd); err != nil {
		t.Fatal(err)
	}
	return files
}

func TestProtoOptionErrors(t *testing.T) {
	lk := offlineLocker(t)
	files := badFiles(t, &locktagv1.LockRule{Key: "d:{req.nope}"}, &locktagv1.LockRule{Key: "t:{req.id}", Wait: "1s"})
	_, err := New(lk, nil, WithRegistry(files, nil))
	var re *RuleError
	if !errors.As(err, &re) || !errors.Is(err, ErrBadField) || !errors.Is(err, ErrReqInStream) {
		t.Fatalf("New: %v, want ErrBadField and ErrReqInStream in RuleErrors", err)
	}
	if re.Origin != "proto option (locktag.v1.lock) in dyn/v1/dyn.proto" || re.Tag != `key:"d:{req.nope}"` {
		t.Errorf("RuleError = %+v", re)
	}
	// Go rules replace (or remove) the broken options; then New succeeds.
	_, err = New(lk, Rules{"/dyn.v1.Dyn/Do": `key:"d:{req.id}"`, "/dyn.v1.Dyn/Tail": ""}, WithRegistry(files, nil))
	if err != nil {
		t.Fatalf("New with overriding rules: %v", err)
	}
	if _, err := New(lk, nil, WithRegistry(files, nil), WithProtoOptions(false)); err != nil {
		t.Fatalf("New without proto options: %v", err)
	}
}

// TestDynamicMessage locks methods whose requests are dynamicpb messages:
// one known only to a custom registry, and one whose descriptor is a copy of
// the generated one (read by field number).
func TestDynamicMessage(t *testing.T) {
	e := newEnv(t)
	files := badFiles(t, &locktagv1.LockRule{Key: "dyn:{req.id}"}, &locktagv1.LockRule{Key: "tail:{md.x}"})
	lockName := func(ic *Interceptor, method string, req any) (string, error) {
		var got string
		_, err := ic.Unary()(context.Background(), req, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, _ any) (any, error) {
			got = locker.FromContext(ctx).Key()
			return &testpb.ReserveResponse{}, nil
		})
		return got, err
	}

	ic, err := New(e.lk, nil, WithRegistry(files, nil))
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName("dyn.v1.Req")
	if err != nil {
		t.Fatal(err)
	}
	md := d.(protoreflect.MessageDescriptor)
	msg := dynamicpb.NewMessage(md)
	msg.Set(md.Fields().ByName("id"), protoreflect.ValueOfString("7"))
	if got, err := lockName(ic, "/dyn.v1.Dyn/Do", msg); err != nil || got != "dyn:7" {
		t.Errorf("dynamic request: lock %q, err %v; want dyn:7", got, err)
	}
	// A request of another type than the method's is a bad request.
	_, err = lockName(ic, "/dyn.v1.Dyn/Do", &testpb.ReserveRequest{Sku: "x"})
	wantCode(t, err, codes.InvalidArgument)

	// A copy of the generated file's descriptors.
	copyFD, err := protodesc.NewFile(protodesc.ToFileDescriptorProto(testpb.File_interceptor_internal_rpccore_testpb_test_proto), protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	reqDesc := copyFD.Messages().ByName("ReserveRequest")
	itemDesc := copyFD.Messages().ByName("Item")
	item := dynamicpb.NewMessage(itemDesc)
	item.Set(itemDesc.Fields().ByName("sku"), protoreflect.ValueOfString("i9"))
	req := dynamicpb.NewMessage(reqDesc)
	req.Set(reqDesc.Fields().ByName("item"), protoreflect.ValueOfMessage(item))
	ic, err = New(e.lk, Rules{methodReserve: `key:"s:{req.item.sku}"`})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := lockName(ic, methodReserve, req); err != nil || got != "s:i9" {
		t.Errorf("copied descriptor: lock %q, err %v; want s:i9", got, err)
	}
}

// TestProtoOptionKinds: the option's limit, keep and mode fields are the
// tag's, checked as strictly when the interceptor is built.
func TestProtoOptionKinds(t *testing.T) {
	lk := offlineLocker(t)
	stream := &locktagv1.LockRule{Key: "t:{md.x}"}
	for _, ok := range []*locktagv1.LockRule{
		{Key: "d:{req.id}", Limit: "3", Wait: "1s"},
		{Key: "d:{req.id}", Mode: "read"},
		{Key: "d:{req.id}", Mode: "write", Wait: "1s"},
		{Key: "d:{req.id}", Keep: "10s"},
	} {
		if _, err := New(lk, nil, WithRegistry(badFiles(t, ok, stream), nil)); err != nil {
			t.Errorf("option %v: %v", ok, err)
		}
	}
	for _, bad := range []struct {
		rule *locktagv1.LockRule
		tag  string
	}{
		{&locktagv1.LockRule{Key: "d:{req.id}", Limit: "0"}, `key:"d:{req.id}" limit:"0"`},
		{&locktagv1.LockRule{Key: "d:{req.id}", Mode: "both"}, `key:"d:{req.id}" mode:"both"`},
		{&locktagv1.LockRule{Key: "d:{req.id}", Limit: "2", Mode: "read"}, `key:"d:{req.id}" limit:"2" mode:"read"`},
		{&locktagv1.LockRule{Key: "d:{req.id}", Keep: "1s", Limit: "2"}, `key:"d:{req.id}" limit:"2" keep:"1s"`},
	} {
		_, err := New(lk, nil, WithRegistry(badFiles(t, bad.rule, stream), nil))
		var re *RuleError
		if !errors.As(err, &re) || !errors.Is(err, keyexpr.ErrBadValue) || re.Tag != bad.tag {
			t.Errorf("option %v: %v (rule error %+v), want keyexpr.ErrBadValue for tag %s", bad.rule, err, re, bad.tag)
		}
	}
}
