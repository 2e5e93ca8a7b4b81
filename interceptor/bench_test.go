package interceptor

import (
	"context"
	"testing"

	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/locker"
	"google.golang.org/grpc"
)

// BenchmarkUnary is one Reserve call over bufconn: without the interceptor,
// with it on a method without a rule, and with a lock (watchdog mode and a
// fixed expire) on one uncontended key.
func BenchmarkUnary(b *testing.B) {
	e := newEnv(b)
	req := &testpb.ReserveRequest{Sku: "bench"}
	cases := []struct {
		name  string
		rules Rules
		plain bool
	}{
		{"plain", nil, true},
		{"no-rule", Rules{}, false},
		{"locked", Rules{methodReserve: `key:"sku:{req.sku}"`}, false},
		{"locked-expire", Rules{methodReserve: `key:"sku:{req.sku}" expire:"10s"`}, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var client testpbgrpc.InventoryClient
			if c.plain {
				client = startServer(b, &inventory{})
			} else {
				client = e.serve(b, &inventory{}, c.rules, WithProtoOptions(false))
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.Reserve(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkObtainRelease is the raw locker cost the interceptor adds: one
// Obtain and one Release of an uncontended key.
func BenchmarkObtainRelease(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		le, err := e.lk.Obtain(ctx, "sku:bench", locker.Params{})
		if err != nil {
			b.Fatal(err)
		}
		if err := le.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInterceptor calls the unary interceptor directly (no gRPC): key
// evaluation, Obtain, handler, Release.
func BenchmarkInterceptor(b *testing.B) {
	e := newEnv(b)
	ic, err := New(e.lk, Rules{methodReserve: `key:"sku:{req.item.sku}"`}, WithProtoOptions(false))
	if err != nil {
		b.Fatal(err)
	}
	unary := ic.Unary()
	info := &grpc.UnaryServerInfo{FullMethod: methodReserve}
	req := &testpb.ReserveRequest{Item: &testpb.Item{Sku: "bench"}}
	handler := func(context.Context, any) (any, error) { return req, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := unary(ctx, req, info, handler); err != nil {
			b.Fatal(err)
		}
	}
}
