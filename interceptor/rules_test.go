package interceptor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/interceptor/internal/testpb"
	"github.com/locktag/locktag/interceptor/locktagv1"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// offlineLocker is a Locker whose Redis is never dialled: construction
// never touches Redis.
func offlineLocker(t *testing.T) *locker.Locker {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) {
		t.Error("construction dialled Redis")
		return nil, errors.New("no redis")
	}}
	return locker.New(pool)
}

func TestConstructionErrors(t *testing.T) {
	lk := offlineLocker(t)
	tests := []struct {
		name  string
		rules Rules
		opts  []Option
		is    error
		want  []string // substrings of the message
	}{
		{"bad duration", Rules{methodReserve: `key:"sku:{req.sku}" expire:"10"`}, nil,
			keyexpr.ErrBadDuration, []string{methodReserve, "field expire at byte 27", `expire:"10"`}},
		{"unknown tag field", Rules{methodReserve: `key:"a:{req.sku}" ttl:"1s"`}, nil,
			keyexpr.ErrUnknownField, []string{"field ttl at byte 18"}},
		{"unknown source", Rules{methodReserve: `key:"a:{path.id}"`}, nil,
			keyexpr.ErrUnknownSource, []string{"field key at byte 7", "{path.id}", "known sources: md, method, req"}},
		{"unknown field", Rules{methodReserve: `key:"a:{req.skew}"`}, nil,
			ErrBadField, []string{`has no field "skew"`, "field key at byte 7"}},
		{"unknown nested field", Rules{methodReserve: `key:"a:{req.item.id}"`}, nil,
			ErrBadField, []string{`locktag.test.v1.Item has no field "id"`}},
		{"path through a scalar", Rules{methodReserve: `key:"a:{req.sku.x}"`}, nil,
			ErrBadField, []string{"is not a message"}},
		{"repeated", Rules{methodReserve: `key:"a:{req.tags}"`}, nil, ErrBadField, []string{"repeated"}},
		{"map", Rules{methodReserve: `key:"a:{req.labels}"`}, nil, ErrBadField, []string{"map"}},
		{"message leaf", Rules{methodReserve: `key:"a:{req.item}"`}, nil, ErrBadField, []string{"is a message"}},
		{"float", Rules{methodReserve: `key:"a:{req.price}"`}, nil, ErrBadField, []string{"floating-point"}},
		{"req in a stream rule", Rules{methodWatch: `key:"w:{req.sku}"`}, nil, ErrReqInStream, []string{methodWatch}},
		{"unknown method", Rules{"/locktag.test.v1.Inventory/Reserv": `key:"a:{md.x}"`}, nil,
			ErrUnknownMethod, []string{"not in the descriptor registry"}},
		{"malformed method", Rules{"locktag.test.v1.Inventory.Reserve": `key:"a:{md.x}"`}, nil,
			ErrUnknownMethod, []string{"not a full method name"}},
		{"disabling an unknown method", Rules{"/nope.Svc/Do": ""}, nil, ErrUnknownMethod, nil},
		{"bad md key", Rules{methodReserve: `key:"a:{md.x y}"`}, nil, ErrBadSource, []string{"metadata key"}},
		{"method with a path", Rules{methodReserve: `key:"a:{method.x}"`}, nil, ErrBadSource, nil},
		{"builtin source redefined", nil, []Option{WithSource("md", ContextSource(nil))}, ErrBadSource, []string{"built-in"}},
		{"unknown ctx path", Rules{methodReserve: `key:"a:{ctx.usr}"`},
			[]Option{WithSource("ctx", ContextSource(map[string]func(context.Context) string{"user": nil}))},
			ErrBadSource, []string{`unknown path "usr" (known: user)`}},
		{"fail-open without a rule", nil, []Option{WithFailOpen(methodReserve)}, ErrBadOption, []string{"has no lock rule"}},
		{"bad value cap", nil, []Option{WithMaxValueLen(0)}, ErrBadOption, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(lk, tt.rules, tt.opts...)
			if !errors.Is(err, tt.is) {
				t.Fatalf("New: %v, want %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			defer func() {
				if p := recover(); p == nil {
					t.Error("UnaryServerInterceptor did not panic")
				} else if perr, ok := p.(error); !ok || perr.Error() != err.Error() {
					t.Errorf("panic value %v, want New's error", p)
				}
			}()
			UnaryServerInterceptor(lk, tt.rules, tt.opts...)
		})
	}
}

func TestRuleErrorDetails(t *testing.T) {
	tag := `key:"sku:{req.nope}" wait:"1s"`
	_, err := New(offlineLocker(t), Rules{methodReserve: tag, methodWatch: `key:"{md.x}" wait:"x"`})
	var re *RuleError
	if !errors.As(err, &re) {
		t.Fatalf("New: %v, want a *RuleError", err)
	}
	var te *keyexpr.TagError
	if !errors.As(re, &te) || te.Tag != tag || te.Field != "key" || tag[te.Pos:te.Pos+10] != "{req.nope}" {
		t.Fatalf("TagError = %+v, want field key at the placeholder", te)
	}
	if re.Method != methodReserve || re.Origin != "Rules" || re.Tag != tag {
		t.Errorf("RuleError = %+v", re)
	}
	if !strings.Contains(err.Error(), methodWatch) {
		t.Errorf("joined error %q does not report the second rule", err)
	}
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
	_, err := New(lk, nil, WithFiles(files))
	var re *RuleError
	if !errors.As(err, &re) || !errors.Is(err, ErrBadField) || !errors.Is(err, ErrReqInStream) {
		t.Fatalf("New: %v, want ErrBadField and ErrReqInStream in RuleErrors", err)
	}
	if re.Origin != "proto option (locktag.v1.lock) in dyn/v1/dyn.proto" || re.Tag != `key:"d:{req.nope}"` {
		t.Errorf("RuleError = %+v", re)
	}
	// Go rules replace (or remove) the broken options; then New succeeds.
	_, err = New(lk, Rules{"/dyn.v1.Dyn/Do": `key:"d:{req.id}"`, "/dyn.v1.Dyn/Tail": ""}, WithFiles(files))
	if err != nil {
		t.Fatalf("New with overriding rules: %v", err)
	}
	if _, err := New(lk, nil, WithFiles(files), WithProtoOptions(false)); err != nil {
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

	ic, err := New(e.lk, nil, WithFiles(files))
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
	copyFD, err := protodesc.NewFile(protodesc.ToFileDescriptorProto(testpb.File_interceptor_internal_testpb_test_proto), protoregistry.GlobalFiles)
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

func TestKeySources(t *testing.T) {
	e := newEnv(t)
	user := ContextSource(map[string]func(context.Context) string{
		"user": func(ctx context.Context) string { s, _ := ctx.Value(userKey{}).(string); return s },
	})
	ctx := metadata.NewIncomingContext(context.WithValue(context.Background(), userKey{}, "ann"),
		metadata.Pairs("x-tenant", "acme", "x-tenant", "second"))
	zero := int32(0)
	full := &testpb.ReserveRequest{
		Sku: "a:b", Item: &testpb.Item{Sku: "in"}, Qty: -42, Priority: testpb.Priority_PRIORITY_HIGH,
		Ref: []byte{0, 'r'}, Shelf: &zero, Gift: true,
	}
	tests := []struct {
		tag  string
		req  *testpb.ReserveRequest
		want string // lock name; "" = InvalidArgument
	}{
		{`key:"s:{req.sku}"`, full, "s:a%3Ab"},
		{`key:"s:{req.item.sku}"`, full, "s:in"},
		{`key:"q:{req.qty}"`, full, "q:-42"},
		{`key:"p:{req.priority}"`, full, "p:2"},
		{`key:"r:{req.ref}"`, full, "r:%00r"},
		{`key:"sh:{req.shelf}"`, full, "sh:0"}, // explicit presence: 0 is a value
		{`key:"sh:{req.shelf}"`, &testpb.ReserveRequest{}, ""},
		{`key:"g:{req.gift}"`, full, "g:true"},
		{`key:"g:{req.gift}"`, &testpb.ReserveRequest{}, ""},
		{`key:"p:{req.priority}"`, &testpb.ReserveRequest{}, ""},
		{`key:"t:{md.X-Tenant}"`, full, "t:acme"},
		{`key:"m:{method}"`, full, "m:/locktag.test.v1.Inventory/Reserve"},
		{`key:"u:{ctx.user}/{req.sku}"`, full, "u:ann/a%3Ab"},
		{`key:"h:{req.sku}" long:"hash"`, &testpb.ReserveRequest{Sku: strings.Repeat("x", 300)}, "h:%sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			ic, err := New(e.lk, Rules{methodReserve: tt.tag}, WithSource("ctx", user))
			if err != nil {
				t.Fatal(err)
			}
			var got string
			_, err = ic.Unary()(ctx, tt.req, &grpc.UnaryServerInfo{FullMethod: methodReserve}, func(ctx context.Context, _ any) (any, error) {
				got = locker.FromContext(ctx).Key()
				return &testpb.ReserveResponse{}, nil
			})
			if tt.want == "" {
				wantCode(t, err, codes.InvalidArgument)
				return
			}
			if err != nil || !strings.HasPrefix(got, tt.want) {
				t.Fatalf("lock name %q, err %v; want %q", got, err, tt.want)
			}
		})
	}
}

type userKey struct{}
