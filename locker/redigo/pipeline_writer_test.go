package redigo

import (
	"context"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
)

// TestWriterLeavesReading: a caller that goes on writing the calls that
// arrived while it wrote its own does not hold their replies back. Its own
// call had the reader role; the helper takes it over, so the reply of a
// call written in the writer's second batch arrives while the writer is
// still writing. With the role left to the busy writer, nobody reads.
func TestWriterLeavesReading(t *testing.T) {
	srv := redistest.Start(t)
	d := newPipelined(srv.Pool(t), 1, 5*time.Second)
	t.Cleanup(func() { _ = d.Close() })
	pc := d.conns[0]
	ctx := context.Background()
	newCall := func() *pipeCall {
		return &pipeCall{done: make(chan struct{}, 1), lead: make(chan struct{}, 1)}
	}
	second := newCall()
	secondErr := make(chan error, 1)
	batches := 0
	answeredWhileWriting := false
	hook := func() {
		batches++
		switch batches {
		case 1:
			// The writer's own call is written; another arrives now.
			go func() {
				_, err, _ := pc.do(ctx, "PING", second)
				secondErr <- err
			}()
			s := pc.s
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				s.mu.Lock()
				queued := len(s.queue)
				s.mu.Unlock()
				if queued == 1 {
					break
				}
			}
		case 2:
			// Still writing: the second call's reply must come meanwhile.
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if second.answered() {
					answeredWhileWriting = true
					return
				}
			}
		}
	}
	afterBatch.Store(&hook)
	t.Cleanup(func() { afterBatch.Store(nil) })

	v, err, _ := pc.do(ctx, "PING", newCall())
	afterBatch.Store(nil)
	if err != nil || v != "PONG" {
		t.Fatalf("writer's own call: %v, %v", v, err)
	}
	if batches != 2 {
		t.Fatalf("the writer sent %d batches, want 2 (its own call, then the one that came)", batches)
	}
	if !answeredWhileWriting {
		t.Fatal("the second call's reply was not read while the writer was still writing")
	}
	if err := <-secondErr; err != nil {
		t.Fatalf("second call: %v", err)
	}
}
