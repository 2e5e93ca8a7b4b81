package interceptor

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
)

// exampleRedis is the redis-server the Example functions use: they cannot
// start their own (they have no *testing.T).
var exampleRedis *redistest.Server

// RedisPoolForExamples returns a pool to the examples' redis-server (exported for
// the interceptor_test package).
func RedisPoolForExamples() *redis.Pool { return exampleRedis.Pool(exampleTB) }

var exampleTB = &mainTB{}

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Fprintln(os.Stderr, "redis-server not found on PATH: install it (apt-get install -y redis-server)")
		if os.Getenv("LOCKTAG_SKIP_REDIS") == "1" {
			os.Exit(0)
		}
		os.Exit(1)
	}
	exampleRedis = redistest.Start(exampleTB)
	code := m.Run()
	exampleTB.close()
	os.Exit(code)
}

// mainTB gives redistest the few testing.TB methods it uses outside a test.
type mainTB struct {
	testing.TB // nil; only the methods below are called
	cleanups   []func()
	dirs       []string
}

func (tb *mainTB) Helper()          {}
func (tb *mainTB) Cleanup(f func()) { tb.cleanups = append(tb.cleanups, f) }
func (tb *mainTB) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
func (tb *mainTB) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (tb *mainTB) Skip(args ...any) { panic(fmt.Sprint(args...)) }
func (tb *mainTB) TempDir() string {
	d, err := os.MkdirTemp("", "interceptor-examples-*")
	if err != nil {
		panic(err)
	}
	tb.dirs = append(tb.dirs, d)
	return d
}

func (tb *mainTB) close() {
	for _, f := range slices.Backward(tb.cleanups) {
		f()
	}
	for _, d := range tb.dirs {
		_ = os.RemoveAll(d)
	}
}
