package redigo

import (
	"context"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
)

// TestPickSpillsOnlyALoneCall: the first connection takes every call
// unless it holds exactly one; then an idle other connection takes it.
func TestPickSpillsOnlyALoneCall(t *testing.T) {
	d := newPipelined(redistest.Start(t).Pool(t), 3, 5*time.Second)
	t.Cleanup(func() { _ = d.Close() })
	c0, c1, c2 := d.conns[0], d.conns[1], d.conns[2]
	for _, tc := range []struct {
		name       string
		n0, n1, n2 int32
		want       *pipeConn
	}{
		{"all idle", 0, 0, 0, c0},
		{"first holds one", 1, 0, 0, c1},
		{"first and second hold one", 1, 1, 0, c2},
		{"every one holds one", 1, 1, 1, c0},
		{"first holds two", 2, 0, 0, c0},
		{"first holds many", 40, 0, 0, c0},
	} {
		c0.calls.Store(tc.n0)
		c1.calls.Store(tc.n1)
		c2.calls.Store(tc.n2)
		if got := d.pick(); got != tc.want {
			t.Errorf("%s: picked connection %d", tc.name, indexOf(d.conns, got))
		}
	}
	c0.calls.Store(0)
	c1.calls.Store(0)
	c2.calls.Store(0)
}

func indexOf(conns []*pipeConn, pc *pipeConn) int {
	for i, c := range conns {
		if c == pc {
			return i
		}
	}
	return -1
}

// TestSecondCallerOwnConnection: on a real server, a call made while
// another is in flight on the first connection goes out on the second and
// is answered there.
func TestSecondCallerOwnConnection(t *testing.T) {
	srv := redistest.Start(t)
	one, two := driver.NewScript("return 1"), driver.NewScript("return 2")
	d := newPipelined(srv.Pool(t), 2, 5*time.Second)
	t.Cleanup(func() { _ = d.Close() })
	ctx := context.Background()
	if _, err := d.Eval(ctx, one, driver.Keys{}); err != nil { // dials the first
		t.Fatal(err)
	}
	// The server holds every client's commands for a while: the first call
	// stays in flight on the first connection meanwhile.
	admin := srv.Pool(t).Get()
	defer admin.Close()
	if _, err := admin.Do("CLIENT", "PAUSE", 300); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := d.Eval(ctx, one, driver.Keys{})
		first <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); d.conns[0].calls.Load() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first call never went out on the first connection")
		}
	}
	v, err := d.Eval(ctx, two, driver.Keys{})
	if err != nil || v != int64(2) {
		t.Fatalf("second call: %v, %v", v, err)
	}
	d.conns[1].mu.Lock()
	used := d.conns[1].s != nil
	d.conns[1].mu.Unlock()
	if !used {
		t.Error("the second call did not go out on the second connection")
	}
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
}
