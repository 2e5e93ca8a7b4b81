package rueidis_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/driver/drivertest"
	lockrueidis "github.com/locktag/locktag/locker/rueidis"
)

// contractOption is the client option the contract runs with: rueidis'
// defaults (RESP3, auto-pipelining, client-side caching on) on one server.
func contractOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{addr}}
}

// TestContract runs the driver contract on a driver that makes its own
// client (NewFromOption: the suite's unreachable server has no client to
// give New), and on New with a client made by the test, over RESP3 and
// RESP2.
func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	t.Run("NewFromOption", func(t *testing.T) {
		drivertest.Run(t, drivertest.Config{
			Addr: srv.Addr(),
			New: func(t testing.TB, addr string) driver.Driver {
				return lockrueidis.NewFromOption(contractOption(addr))
			},
		})
	})
	for _, resp2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "New/RESP3", true: "New/RESP2"}[resp2], func(t *testing.T) {
			drivertest.Run(t, drivertest.Config{
				Addr: srv.Addr(),
				New: func(t testing.TB, addr string) driver.Driver {
					o := contractOption(addr)
					o.AlwaysRESP2, o.DisableCache = resp2, resp2 // RESP2 has no client-side caching
					c, err := rueidis.NewClient(o)
					if err != nil {
						// Only the suite's unreachable server: a driver
						// that makes its client later.
						return lockrueidis.NewFromOption(o)
					}
					t.Cleanup(c.Close)
					return lockrueidis.New(c)
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

func (b broken) Close() error { return b.Driver.(interface{ Close() error }).Close() }

func TestContractControl(t *testing.T) {
	if os.Getenv(controlEnv) == "" {
		t.Skip("run by TestContractCatchesBrokenDriver")
	}
	srv := redistest.Start(t)
	drivertest.Run(t, drivertest.Config{
		Addr: srv.Addr(),
		New: func(t testing.TB, addr string) driver.Driver {
			return broken{lockrueidis.NewFromOption(contractOption(addr))}
		},
	})
}

// TestContractCatchesBrokenDriver: the contract fails a driver that breaks
// it, naming the clauses, and passes the clauses it keeps.
func TestContractCatchesBrokenDriver(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestContractControl$", "-test.v", "-test.timeout=5m")
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
