// Command scopeversion prints the instrumentation scope version of the
// spans a Locker records, as a binary built against locktag sees it. The
// spantree test builds it (go build records the build information that
// test binaries leave out).
package main

import (
	"context"
	"fmt"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
	"github.com/locktag/locktag/locker/redigo"

	"github.com/gomodule/redigo/redis"
)

func main() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	// Nothing listens there: the failed Obtain still records its span.
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", "127.0.0.1:1") }}
	lk, err := locker.New(redigo.New(pool), locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(tp))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, _ = lk.Obtain(context.Background(), "k", locker.Params{})
	for _, s := range rec.Ended() {
		fmt.Println(s.InstrumentationScope().Name, s.InstrumentationScope().Version)
		return
	}
	fmt.Fprintln(os.Stderr, "no span")
	os.Exit(1)
}
