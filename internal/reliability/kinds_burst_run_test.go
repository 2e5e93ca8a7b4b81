package reliability

import (
	"strconv"
	"testing"
	"time"
)

// TestSemaphoreBurst: 1,500 waiters over 3 processes arrive at once at one
// semaphore of 8 permits. At no moment do more than 8 hold it, and 8 do
// hold it at once (the permits are used, not serialised); every waiter is
// served within its wait, none sees Redis as unavailable, and nothing is
// left queued.
func TestSemaphoreBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("1,500 waiters over 3 processes")
	}
	const procs, waiters, limit = 3, 500, 8
	r := runKindBurst(t, "sem-burst", semBurst(waiters, limit, nil))
	t.Logf("%d waiters, limit %d: %d served in %v (longest wait %v), %d timed out; peak holders %d", procs*waiters, limit, r.got, r.took.Round(time.Millisecond), r.maxWait, r.timeout, r.maxShared)
	r.check(t, procs*waiters)
	if r.maxShared > limit {
		t.Fatalf("%d holders at once, limit %d", r.maxShared, limit)
	}
	if r.maxShared != limit {
		t.Fatalf("peak holders %d: the %d permits were never all in use", r.maxShared, limit)
	}
}

// TestSemaphoreBurstControl breaks the limit — each process with a key
// prefix of its own, so each admits 8 — and asserts that the detector
// sees more than 8 holders at once.
func TestSemaphoreBurstControl(t *testing.T) {
	const limit = 8
	r := runKindBurst(t, "sem-burst", semBurst(200, limit, func(i int) string { return "broken" + strconv.Itoa(i) + ":" }))
	if r.maxShared <= limit {
		t.Fatalf("control: peak holders %d with a broken limit of %d: the detector does not fire", r.maxShared, limit)
	}
	t.Logf("control: peak holders %d, limit %d", r.maxShared, limit)
}

// rwBurst is the read/write burst's plan: waiters per process over three
// processes, every 10th a writer.
func rwBurst(waiters int, prefix func(int) string) kindBurst {
	return kindBurst{procs: 3, waiters: waiters, writers: 10, prefix: prefix,
		child: childEnv{ttl: 20 * time.Second, wait: 2 * time.Minute, think: 2 * time.Millisecond, window: burstWindow, call: burstCallTimeout}}
}

// TestReadWriteBurst: 2,100 waiters over 3 processes — 10% writers, the
// rest readers — arrive at once at one read/write lock. A writer never
// overlaps anyone (reader or writer), readers do share the lock (more than
// one seen at once), every writer is served within its wait (no writer
// starves behind the stream of readers), as is every reader; none sees
// Redis as unavailable, and nothing is left queued.
func TestReadWriteBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("2,100 waiters over 3 processes")
	}
	const procs, waiters = 3, 700
	r := runKindBurst(t, "rw-burst", rwBurst(waiters, nil))
	t.Logf("%d waiters (%d writers): %d served in %v (longest wait: writer %v, reader %v), %d timed out; peak readers %d, peak writers %d, overlaps %d",
		procs*waiters, procs*waiters/10, r.got, r.took.Round(time.Millisecond), r.wmaxWait, r.maxWait, r.timeout, r.maxShared, r.maxWriters, r.bad)
	r.check(t, procs*waiters)
	if r.bad != 0 || r.maxWriters > 1 {
		t.Fatalf("%d entries overlapped a writer (peak writers %d)", r.bad, r.maxWriters)
	}
	if r.wgot != procs*waiters/10 || r.wtimeout != 0 {
		t.Fatalf("writers: %d served, %d timed out, of %d", r.wgot, r.wtimeout, procs*waiters/10)
	}
	if r.maxShared < 2 {
		t.Fatalf("peak readers %d: readers never shared the lock", r.maxShared)
	}
}

// TestReadWriteBurstControl breaks the lock — each process with a key
// prefix of its own — and asserts that the detector sees writers overlap.
func TestReadWriteBurstControl(t *testing.T) {
	r := runKindBurst(t, "rw-burst", rwBurst(200, func(i int) string { return "broken" + strconv.Itoa(i) + ":" }))
	if r.bad == 0 {
		t.Fatalf("control: no overlap with a writer seen under a broken lock (peak readers %d, writers %d)", r.maxShared, r.maxWriters)
	}
	t.Logf("control: %d entries overlapped a writer, peak writers %d", r.bad, r.maxWriters)
}
