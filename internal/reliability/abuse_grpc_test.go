package reliability

import (
	"context"
	"strings"
	"testing"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/dynamicpb"
)

// grpcRules lock each Abuse method on one key source.
var grpcRules = interceptor.Rules{
	methodStr:   `key:"sku:{req.s}" expire:"10s"`,
	methodBytes: `key:"b:{req.b}" expire:"10s"`,
	methodMD:    `key:"u:{md.x-user}" expire:"10s"`,
}

// TestGRPCAbuse sends hostile values through the gRPC interceptor's key
// sources — request fields (string and bytes) and metadata. The calls go to
// the interceptor directly, so values a gRPC client library would refuse to
// send (invalid UTF-8 in a proto3 string, CR/LF or NUL in metadata) reach it
// too. Each is refused with InvalidArgument before Redis is touched, or the
// handler holds exactly the lock named by the escaped value.
func TestGRPCAbuse(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Pool(t))
	ic, err := interceptor.New(lk, grpcRules, interceptor.WithRegistry(abuseFiles, nil))
	if err != nil {
		t.Fatal(err)
	}
	unary := ic.Unary()
	long := strings.Repeat("x", 300)
	md := func(v ...string) context.Context {
		m := metadata.MD{}
		if len(v) > 0 {
			m["x-user"] = v
		}
		return metadata.NewIncomingContext(context.Background(), m)
	}
	cases := []struct {
		name    string
		ctx     context.Context
		method  string
		req     *dynamicpb.Message
		code    codes.Code
		wantKey string
	}{
		{"braces", md(), methodStr, newReq("{x}", nil, nil), codes.OK, "sku:%7Bx%7D"},
		{"separator", md(), methodStr, newReq("a:b", nil, nil), codes.OK, "sku:a%3Ab"},
		{"CR LF", md(), methodStr, newReq("a\r\nb", nil, nil), codes.OK, "sku:a%0D%0Ab"},
		{"NUL", md(), methodStr, newReq("a\x00b", nil, nil), codes.OK, "sku:a%00b"},
		{"invalid UTF-8 string", md(), methodStr, newReq("\xff", nil, nil), codes.OK, "sku:%FF"},
		{"huge string", md(), methodStr, newReq(long, nil, nil), codes.InvalidArgument, ""},
		{"missing string", md(), methodStr, newReq("", nil, nil), codes.InvalidArgument, ""},
		{"bytes", md(), methodBytes, newReq("", []byte("\x00\xff{}:"), nil), codes.OK, "b:%00%FF%7B%7D%3A"},
		{"huge bytes", md(), methodBytes, newReq("", []byte(long), nil), codes.InvalidArgument, ""},
		{"metadata CR LF", md("u\r\n1"), methodMD, newReq("", nil, nil), codes.OK, "u:u%0D%0A1"},
		{"metadata NUL", md("u\x001"), methodMD, newReq("", nil, nil), codes.OK, "u:u%001"},
		{"metadata braces", md("}{"), methodMD, newReq("", nil, nil), codes.OK, "u:%7D%7B"},
		{"metadata missing", md(), methodMD, newReq("", nil, nil), codes.InvalidArgument, ""},
		{"metadata empty", md(""), methodMD, newReq("", nil, nil), codes.InvalidArgument, ""},
		{"metadata huge", md(long), methodMD, newReq("", nil, nil), codes.InvalidArgument, ""},
	}
	keys := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got string
			resetStats(t, srv)
			_, err := unary(c.ctx, c.req, &grpc.UnaryServerInfo{FullMethod: c.method}, func(ctx context.Context, req any) (any, error) {
				le := locker.FromContext(ctx)
				got = "<no lease>"
				if le != nil {
					got = le.Key()
					if owner(t, srv, got) == "" {
						got += " <not in redis>"
					}
				}
				return newResp(le.Token(), got), nil
			})
			calls := commandCalls(t, srv)
			if code := status.Code(err); code != c.code {
				t.Fatalf("code %v (%v), want %v", code, err, c.code)
			}
			if c.wantKey == "" {
				if len(calls) != 0 {
					t.Fatalf("refused call touched Redis: %v", calls)
				}
				if got != "" {
					t.Fatalf("handler ran holding %q", got)
				}
				return
			}
			if got != c.wantKey {
				t.Fatalf("handler held %q, want %q", got, c.wantKey)
			}
			if prev, dup := keys[got]; dup {
				t.Fatalf("cases %q and %q locked the same key", prev, c.name)
			}
			keys[got] = c.name
		})
	}
}

// TestGRPCIdempotencyAbuse: malformed idempotency-key metadata is refused
// with InvalidArgument before Redis is touched, over a real gRPC connection;
// a request larger than the server's receive limit — the bound on what the
// fingerprint hashes — is refused by gRPC (ResourceExhausted) before the
// interceptor runs. A good key executes once and replays.
func TestGRPCIdempotencyAbuse(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv.Pool(t))
	g, err := interceptor.NewIdempotency(lk, []string{methodPay}, guard.WithPublicScope(),
		interceptor.WithRegistry(abuseFiles, abuseTypes))
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	conn := serveGRPC(t, func(ctx context.Context, method string, req *dynamicpb.Message) (any, error) {
		runs++
		return newResp(int64(runs), ""), nil
	}, grpc.ChainUnaryInterceptor(g.Unary()), grpc.MaxRecvMsgSize(64<<10))

	call := func(req *dynamicpb.Message, keys ...string) error {
		ctx := context.Background()
		for _, k := range keys {
			ctx = metadata.AppendToOutgoingContext(ctx, interceptor.IdempotencyKeyMetadata, k)
		}
		_, err := invoke(ctx, conn, methodPay, req)
		return err
	}
	small := newReq("pay", nil, nil)
	cases := []struct {
		name string
		req  *dynamicpb.Message
		keys []string
		code codes.Code
	}{
		{"missing", small, nil, codes.InvalidArgument},
		{"empty quoted", small, []string{`""`}, codes.InvalidArgument},
		{"too long", small, []string{strings.Repeat("k", 256)}, codes.InvalidArgument},
		{"unbalanced quote", small, []string{`"abc`}, codes.InvalidArgument},
		{"space in bare key", small, []string{"a b"}, codes.InvalidArgument},
		{"two values", small, []string{"a", "b"}, codes.InvalidArgument},
		{"oversized request", newReq("pay", nil, make([]byte, 128<<10)), []string{"k-big"}, codes.ResourceExhausted},
		{"good", small, []string{`"k-1"`}, codes.OK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := runs
			resetStats(t, srv)
			err := call(c.req, c.keys...)
			calls := commandCalls(t, srv)
			if code := status.Code(err); code != c.code {
				t.Fatalf("code %v (%v), want %v", code, err, c.code)
			}
			if c.code != codes.OK {
				if len(calls) != 0 || runs != before {
					t.Fatalf("refused call touched Redis (%v) or ran (%d)", calls, runs-before)
				}
			}
		})
	}
	// The good key replays without running again.
	if err := call(small, `"k-1"`); err != nil || runs != 1 {
		t.Fatalf("replay: %v, runs %d", err, runs)
	}
}
