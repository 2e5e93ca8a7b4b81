package interceptor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/locker"
	"google.golang.org/grpc/codes"
)

func TestStreamHoldsLock(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{}
	client := e.serve(t, impl, Rules{methodWatch: `key:"watch:{md.X-User}:{method}" wait:"0s"`})
	ctx := metadataCtx(testCtx(t), "x-user", "ann")

	open := func() (testpbgrpc.Inventory_WatchClient, int64, error) {
		s, err := client.Watch(ctx)
		if err != nil {
			return nil, 0, err
		}
		if err := s.Send(&testpb.WatchRequest{Sku: "a"}); err != nil {
			_, err = s.Recv() // the stream's status
			return nil, 0, err
		}
		resp, err := s.Recv()
		if err != nil {
			return nil, 0, err
		}
		return s, resp.Token, nil
	}
	first, tok1, err := open()
	if err != nil || tok1 == 0 {
		t.Fatalf("first stream: token %d, err %v; want a lease", tok1, err)
	}
	_, _, err = open()
	st := wantCode(t, err, codes.Aborted)
	if ei := errorInfo(st); ei == nil || ei.Reason != ReasonBusy {
		t.Errorf("ErrorInfo = %v, want %s", ei, ReasonBusy)
	}
	if err := first.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Recv(); err == nil {
		t.Fatal("first stream still open after CloseSend")
	}
	third, tok3, err := open()
	if err != nil || tok3 <= tok1 {
		t.Fatalf("stream after the first closed: token %d (first %d), err %v", tok3, tok1, err)
	}
	_ = third.CloseSend()

	// A stream without the metadata is refused before the handler.
	calls := impl.calls.Load()
	s, err := client.Watch(testCtx(t))
	if err == nil {
		_, err = s.Recv()
	}
	wantCode(t, err, codes.InvalidArgument)
	if impl.calls.Load() != calls {
		t.Error("handler ran for a stream with a bad key")
	}
}

func TestStreamLockLost(t *testing.T) {
	e := newEnv(t)
	impl := &inventory{watch: func(s testpbgrpc.Inventory_WatchServer) error {
		<-s.Context().Done()
		if !errors.Is(context.Cause(s.Context()), locker.ErrLockLost) {
			return fmt.Errorf("cause %v", context.Cause(s.Context()))
		}
		return s.Context().Err()
	}}
	client := e.serve(t, impl, Rules{methodWatch: `key:"watch:{md.x-user}" expire:"100ms"`})
	s, err := client.Watch(metadataCtx(testCtx(t), "x-user", "bob"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv()
	st := wantCode(t, err, codes.Aborted)
	if ei := errorInfo(st); ei == nil || ei.Reason != ReasonLost {
		t.Errorf("ErrorInfo = %v, want %s", ei, ReasonLost)
	}
}
