package guard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// TestMaxKeysAgree: a tag accepts no more templates than the locker takes.
func TestMaxKeysAgree(t *testing.T) {
	if keyexpr.MaxKeys != locker.MaxKeys {
		t.Fatalf("keyexpr.MaxKeys %d, locker.MaxKeys %d", keyexpr.MaxKeys, locker.MaxKeys)
	}
}

// TestMultiKeyLock: a `keys` tag locks every key; opposite orders do not
// deadlock; a single-key guard on one of the keys is excluded; a missing
// value is BadKey before Redis is touched.
func TestMultiKeyLock(t *testing.T) {
	lk := newLocker(t)
	transfer, err := CompileLock(lk, `keys:"acct:{v.from},acct:{v.to}" wait:"30s"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	single, err := CompileLock(lk, `key:"acct:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Inside a transfer, a single-key guard on either account is Busy
	// (a fresh context: no re-entry), and the lease names both keys.
	o := transfer.Run(ctx, req{"from": "1", "to": "2"}, "transfer", func(lctx context.Context) error {
		le := locker.FromContext(lctx)
		if got := le.Keys(); len(got) != 2 {
			t.Errorf("lease keys %q", got)
		}
		for _, id := range []string{"1", "2"} {
			if o := single.Run(ctx, req{"id": id}, "deposit", func(context.Context) error { return nil }); o.Kind != Busy {
				t.Errorf("deposit to %s during the transfer: %v", id, o.Kind)
			}
		}
		return nil
	})
	if o.Kind != OK || o.Err != nil {
		t.Fatalf("transfer: %+v", o)
	}
	if o := transfer.Run(ctx, req{"from": "1"}, "transfer", func(context.Context) error { return nil }); o.Kind != BadKey {
		t.Fatalf("missing to: %v", o.Kind)
	}
	if o := transfer.Run(ctx, req{"from": "3", "to": "3"}, "transfer", func(context.Context) error { return nil }); o.Kind != OK {
		t.Fatalf("same account: %+v", o)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		r := req{"from": "1", "to": "2"}
		if i%2 == 1 {
			r = req{"from": "2", "to": "1"}
		}
		wg.Go(func() {
			o := transfer.Run(ctx, r, "transfer", func(context.Context) error { time.Sleep(time.Millisecond); return nil })
			if o.Kind != OK {
				errs <- errors.New(o.Kind.String())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("opposite orders: %v", err)
	}
}

// TestMultiKeyTagErrors: tag mistakes of a `keys` tag fail when the guard
// is built, with the position in the tag.
func TestMultiKeyTagErrors(t *testing.T) {
	lk := offline(t)
	_, err := CompileLock(lk, `keys:"a:{v.x},b:{w.y}"`, sources)
	var te *keyexpr.TagError
	if !errors.As(err, &te) || te.Pos != 16 || !errors.Is(err, keyexpr.ErrUnknownSource) {
		t.Fatalf("unknown source: %v", err)
	}
	if _, err := CompileLock(lk, `keys:"a,b" mode:"write"`, sources); !errors.Is(err, keyexpr.ErrBadValue) {
		t.Fatalf("keys with mode: %v", err)
	}
}
