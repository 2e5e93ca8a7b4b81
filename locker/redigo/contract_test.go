package redigo_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/driver/drivertest"
	"github.com/locktag/locktag/locker/redigo"
)

// TestContract runs the driver contract for both ways of calling: the
// pipelined default and pooled calls.
func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		opts []redigo.Option
	}{
		{"pipelined", nil},
		{"pooled", []redigo.Option{redigo.WithPipelining(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drivertest.Run(t, drivertest.Config{
				Addr: srv.Addr(),
				New: func(t testing.TB, addr string) driver.Driver {
					pool := &redis.Pool{
						MaxIdle: 64,
						DialContext: func(ctx context.Context) (redis.Conn, error) {
							return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(time.Second))
						},
					}
					t.Cleanup(func() { _ = pool.Close() })
					return redigo.New(pool, tc.opts...)
				},
			})
		})
	}
}

// controlEnv, set, makes TestContractControl run the contract on a broken
// driver: the control that shows the suite catches contract breaches.
const controlEnv = "LOCKTAG_CONTRACT_CONTROL"

// broken breaks two clauses of the contract: it hides ErrNotSent and
// returns integers as strings.
type broken struct{ driver.Driver }

func (b broken) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	v, err := b.Driver.Eval(ctx, s, keys, args...)
	if err != nil {
		return nil, errors.New(err.Error())
	}
	if n, ok := v.(int64); ok {
		return strconv.FormatInt(n, 10), nil
	}
	return v, nil
}

func TestContractControl(t *testing.T) {
	if os.Getenv(controlEnv) == "" {
		t.Skip("run by TestContractCatchesBrokenDriver")
	}
	srv := redistest.Start(t)
	drivertest.Run(t, drivertest.Config{
		Addr: srv.Addr(),
		New: func(t testing.TB, addr string) driver.Driver {
			pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
			t.Cleanup(func() { _ = pool.Close() })
			return broken{redigo.New(pool, redigo.WithPipelining(0))}
		},
	})
}

// TestContractCatchesBrokenDriver: the contract fails a driver that breaks
// it, naming the clauses.
func TestContractCatchesBrokenDriver(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestContractControl$", "-test.v")
	cmd.Env = append(os.Environ(), controlEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the contract passed a broken driver:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestContractControl/Replies", "--- FAIL: TestContractControl/Unreachable", "--- PASS: TestContractControl/SubscribeConfirmed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("control output lacks %q:\n%s", want, out)
		}
	}
}
