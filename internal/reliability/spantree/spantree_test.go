package spantree

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/lockotel"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware"
)

const page = "../../../docs/observability.md"

// handlerSpan is the span the handler starts under its context, standing
// for the work done under the lock (the doc's "db.query").
const handlerSpan = "db.query"

// newTracing returns a tracer provider recording into the returned
// recorder, shut down with the test.
func newTracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

func newLocker(t *testing.T, tp trace.TracerProvider) *locker.Locker {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(tp))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// tree renders the recorded spans as the doc draws them: one line per
// span, its name indented by four columns per level, children in start
// order.
func tree(spans []sdktrace.ReadOnlySpan) []string {
	kids := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); s.Parent().IsValid() && ids[p] {
			kids[p] = append(kids[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(ss []sdktrace.ReadOnlySpan) {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].StartTime().Before(ss[j].StartTime()) })
	}
	var out []string
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		out = append(out, strings.Repeat("    ", depth)+s.Name())
		k := kids[s.SpanContext().SpanID()]
		byStart(k)
		for _, c := range k {
			walk(c, depth+1)
		}
	}
	byStart(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return out
}

// drawn returns the tree the page draws after the marker
// "<!-- spantree: which -->" in the same form as tree: each line's span
// name (the text before two spaces or a parenthesis), indented four
// columns per level of the box-drawing prefix.
func drawn(t *testing.T, which string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)<!-- spantree: " + which + " -->\\s*```[a-z]*\\n(.*?)\\n```")
	m := block.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no span tree marked <!-- spantree: %s -->", page, which)
	}
	var out []string
	for _, line := range strings.Split(string(m[1]), "\n") {
		rs := []rune(line)
		i := 0
		for i < len(rs) && strings.ContainsRune("│├└─ ", rs[i]) {
			i++
		}
		name := string(rs[i:])
		if j := strings.Index(name, "  "); j >= 0 {
			name = name[:j]
		}
		if j := strings.Index(name, " ("); j >= 0 {
			name = name[:j]
		}
		out = append(out, strings.Repeat("    ", i/4)+strings.TrimSpace(name))
	}
	return out
}

func compare(t *testing.T, which string, got []string) {
	t.Helper()
	want := drawn(t, which)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("recorded %s trace:\n%s\n\ndocs/observability.md draws:\n%s", which, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestGinSpanTreeMatchesDoc(t *testing.T) {
	tp, rec := newTracing(t)
	lk := newLocker(t, tp)
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(otelgin.Middleware("shop", otelgin.WithTracerProvider(tp)))
	r.POST("/orders/:id/pay",
		middleware.Idempotency(lk, guard.WithPublicScope()),
		middleware.Lock(lk, `key:"order:{path.id}"`),
		func(c *gin.Context) {
			_, span := tp.Tracer("app").Start(c.Request.Context(), handlerSpan)
			span.End()
			c.JSON(http.StatusOK, gin.H{"paid": true})
		})
	req := httptest.NewRequest(http.MethodPost, "/orders/42/pay", strings.NewReader(`{}`))
	req.Header.Set("Idempotency-Key", "k-1")
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	compare(t, "gin", tree(rec.Ended()))
}

type health struct {
	healthpb.UnimplementedHealthServer
}

func (health) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("app").Start(ctx, handlerSpan)
	span.End()
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func TestGRPCSpanTreeMatchesDoc(t *testing.T) {
	tp, rec := newTracing(t)
	lk := newLocker(t, tp)
	const method = "/grpc.health.v1.Health/Check"
	ic, err := interceptor.New(lk, interceptor.Rules{method: `key:"svc:{req.service}"`})
	if err != nil {
		t.Fatal(err)
	}
	ig, err := interceptor.NewIdempotency(lk, []string{method}, guard.WithPublicScope())
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp))),
		grpc.ChainUnaryInterceptor(ig.Unary(), ic.Unary()))
	healthpb.RegisterHealthServer(srv, health{})
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///shop",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx := metadata.AppendToOutgoingContext(t.Context(), interceptor.IdempotencyKeyMetadata, "k-1")
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "shop"}); err != nil {
		t.Fatal(err)
	}
	// The server span ends after the reply is sent: poll for it.
	deadline := time.Now().Add(10 * time.Second)
	for !rootEnded(rec) {
		if time.Now().After(deadline) {
			t.Fatalf("the server span did not end; recorded %v", tree(rec.Ended()))
		}
		time.Sleep(5 * time.Millisecond) // poll interval, not synchronisation
	}
	compare(t, "grpc", tree(rec.Ended()))
}

// rootEnded reports whether a span without a recorded parent ended: the
// request's own span, which ends last.
func rootEnded(rec *tracetest.SpanRecorder) bool {
	for _, s := range rec.Ended() {
		if !s.Parent().IsValid() {
			return true
		}
	}
	return false
}
