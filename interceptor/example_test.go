package interceptor_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// exampleRedis is a redis-server started for the examples by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleRedis = s })
}

// examplePool stands for the application's own redigo pool.
func examplePool() *redis.Pool { return exampleRedis.NewPool() }

// inventory answers Reserve and Restock with the fencing token of the lock
// its handler runs under.
type inventory struct {
	testpbgrpc.UnimplementedInventoryServer
}

func (inventory) Reserve(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	lease := locker.FromContext(ctx) // nil only for methods without a rule
	// ... update stock for req.Sku, passing lease.Token() to the store so a
	// holder that lost its lock cannot overwrite a newer holder's write.
	return &testpb.ReserveResponse{Token: lease.Token()}, nil
}

// dial serves srv on an in-memory listener and returns a client.
func dial(srv *grpc.Server) (testpbgrpc.InventoryClient, func()) {
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///inventory",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	return testpbgrpc.NewInventoryClient(conn), func() { conn.Close(); srv.Stop() }
}

func ExampleNew() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	ic, err := interceptor.New(lk, interceptor.Rules{
		"/locktag.test.v1.Inventory/Reserve": `key:"sku:{req.sku}" expire:"10s" wait:"100ms"`,
	})
	if err != nil {
		log.Fatal(err) // a bad tag, an unknown method or request field
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(ic.Unary()),
		grpc.ChainStreamInterceptor(ic.Stream()),
	)
	testpbgrpc.RegisterInventoryServer(srv, inventory{})
	client, stop := dial(srv)
	defer stop()
	ctx := context.Background()

	resp, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "apple"})
	fmt.Println("reserved:", err == nil && resp.Token > 0)

	// Another replica holds the lock: after waiting 100ms the call is Aborted.
	other, _ := lk.Obtain(ctx, "sku:apple", locker.Params{})
	_, err = client.Reserve(ctx, &testpb.ReserveRequest{Sku: "apple"})
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			fmt.Println(st.Code(), info.Domain, info.Reason)
		}
	}
	_ = other.Release(ctx)

	_, err = client.Reserve(ctx, &testpb.ReserveRequest{})
	fmt.Println(status.Code(err), status.Convert(err).Message())
	// Output:
	// reserved: true
	// Aborted locktag LOCK_BUSY
	// InvalidArgument lock key: {req.sku} is missing or empty
}

func ExampleNew_ruleError() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	_, err = interceptor.New(lk, interceptor.Rules{
		"/locktag.test.v1.Inventory/Reserve": `key:"sku:{req.item.id}" wait:"1s"`,
	})
	var re *interceptor.RuleError
	if errors.As(err, &re) && errors.Is(err, interceptor.ErrBadField) {
		fmt.Println(re.Method)
		fmt.Println(re.Err)
	}
	// Output:
	// /locktag.test.v1.Inventory/Reserve
	// keyexpr: tag `key:"sku:{req.item.id}" wait:"1s"`: field key at byte 9: template "sku:{req.item.id}": placeholder {req.item.id} at byte 4: guard: bad request field: {req.item.id}: locktag.test.v1.Item has no field "id" (fields: sku)
}

type userKey struct{}

func ExampleContextSource() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	// An authentication interceptor runs first and stores the user.
	auth := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if v := metadata.ValueFromIncomingContext(ctx, "authorization"); len(v) > 0 {
			ctx = context.WithValue(ctx, userKey{}, v[0][len("Bearer "):]) // a real one verifies a token
		}
		return h(ctx, req)
	}
	lock := interceptor.UnaryServerInterceptor(lk,
		interceptor.Rules{"/locktag.test.v1.Inventory/Reserve": `key:"cart:{ctx.user}"`},
		interceptor.WithSource("ctx", interceptor.ContextSource(map[string]func(context.Context) string{
			"user": func(ctx context.Context) string { u, _ := ctx.Value(userKey{}).(string); return u },
		})))
	printKey := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		fmt.Println("locked:", locker.FromContext(ctx).Key())
		return h(ctx, req)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(auth, lock, printKey))
	testpbgrpc.RegisterInventoryServer(srv, inventory{})
	client, stop := dial(srv)
	defer stop()

	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer alice")
	_, _ = client.Reserve(ctx, &testpb.ReserveRequest{Sku: "apple"})
	// Output:
	// locked: cart:alice
}

func ExampleWithErrorHandler() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	// Busy locks become ResourceExhausted; everything else keeps the default.
	h := func(ctx context.Context, fullMethod string, o guard.Outcome) error {
		if o.Kind == guard.Busy {
			return status.Errorf(codes.ResourceExhausted, "%s is busy, retry in %v", o.Name, o.RetryAfter)
		}
		return interceptor.DefaultErrorHandler(ctx, fullMethod, o)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptor.UnaryServerInterceptor(lk,
		interceptor.Rules{"/locktag.test.v1.Inventory/Reserve": `key:"sku:{req.sku}" name:"reserve"`},
		interceptor.WithErrorHandler(h))))
	testpbgrpc.RegisterInventoryServer(srv, inventory{})
	client, stop := dial(srv)
	defer stop()

	ctx := context.Background()
	other, _ := lk.Obtain(ctx, "sku:pear", locker.Params{})
	defer other.Release(ctx)
	_, err = client.Reserve(ctx, &testpb.ReserveRequest{Sku: "pear"})
	fmt.Println(status.Code(err), status.Convert(err).Message())
	// Output:
	// ResourceExhausted reserve is busy, retry in 1s
}
