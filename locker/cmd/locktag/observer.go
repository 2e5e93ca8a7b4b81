package main

import (
	"context"
	"sync"
	"time"

	"github.com/locktag/locktag/locker"
)

// forceObserver is the command's locker.Observer: it keeps the owner
// tokens the last ForceRelease freed (ForceEvent.Owners), which is how
// release learns whom it freed. Every other event is ignored.
type forceObserver struct {
	mu    sync.Mutex
	freed []string
}

// Freed returns the owner tokens the last ForceRelease freed.
func (o *forceObserver) Freed() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.freed
}

func (o *forceObserver) StartForceRelease(ctx context.Context, _ locker.ForceEvent) (context.Context, any) {
	return ctx, nil
}

func (o *forceObserver) EndForceRelease(_ context.Context, _ any, e locker.ForceEvent) {
	o.mu.Lock()
	o.freed = e.Owners
	o.mu.Unlock()
}

func (*forceObserver) StartObtain(context.Context) any              { return nil }
func (*forceObserver) EndObtain(any, locker.ObtainEvent)            {}
func (*forceObserver) StartWait(locker.Params)                      {}
func (*forceObserver) EndWait(locker.Params, time.Duration)         {}
func (*forceObserver) StartRelease(context.Context) any             { return nil }
func (*forceObserver) EndRelease(any, locker.ReleaseEvent)          {}
func (*forceObserver) StartIdempotency(context.Context, string) any { return nil }
func (*forceObserver) EndIdempotency(any, locker.IdempotencyEvent)  {}
func (*forceObserver) StartRate(context.Context) any                { return nil }
func (*forceObserver) EndRate(any, locker.RateEvent)                {}
func (*forceObserver) Renewal(any, locker.RenewalEvent)             {}
func (*forceObserver) EndHold(any, locker.HoldEvent)                {}
func (*forceObserver) StartHold(ctx context.Context, _ locker.HoldEvent) (context.Context, any) {
	return ctx, nil
}
