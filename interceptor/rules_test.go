package interceptor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// offlineLocker is a Locker whose Redis is never dialled: construction
// never touches Redis.
func offlineLocker(t *testing.T) *locker.Locker {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) {
		t.Error("construction dialled Redis")
		return nil, errors.New("no redis")
	}}
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	return lk
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
		{"unnamed source", nil, []Option{WithSource("", ContextSource(nil))}, locker.ErrBadOption, []string{"WithSource", "empty source name"}},
		{"nil source", nil, []Option{WithSource("ctx", nil)}, locker.ErrBadOption, []string{"WithSource", "nil source"}},
		{"nil error handler", nil, []Option{WithErrorHandler(nil)}, locker.ErrBadOption, []string{"WithErrorHandler"}},
		{"unknown ctx path", Rules{methodReserve: `key:"a:{ctx.usr}"`},
			[]Option{WithSource("ctx", ContextSource(map[string]func(context.Context) string{"user": nil}))},
			ErrBadSource, []string{`unknown path "usr" (known: user)`}},
		{"fail-open without a rule", nil, []Option{WithFailOpenFor(methodReserve)}, locker.ErrBadOption, []string{"has no lock rule"}},
		{"bad value cap", nil, []Option{guard.WithMaxValueLen(0)}, locker.ErrBadOption, nil},
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
