package connectrpc

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"connectrpc.com/connect"
)

// TestConnectionLost: the client's own reports of a connection lost while
// the server may have answered are retried with the key; errors the
// server sent, and the client's other errors, are not.
func TestConnectionLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"message cut", connect.NewError(connect.CodeUnknown, fmt.Errorf("read message: %w", io.ErrUnexpectedEOF)), true},
		{"gRPC-Web trailer cut (connect-go before v1.20)", connect.NewError(connect.CodeInternal,
			fmt.Errorf("corrupt response: I/O error after end-stream message: %w", errors.New("http: unexpected EOF reading trailer"))), true},
		{"envelope cut (connect-go before v1.20)", connect.NewError(connect.CodeInvalidArgument, errors.New("protocol error: incomplete envelope: unexpected EOF")), true},
		{"HTTP/2 GOAWAY", connect.NewError(connect.CodeInternal, errors.New("http2: server sent GOAWAY and closed the connection")), true},
		{"another internal error", connect.NewError(connect.CodeInternal, errors.New("corrupt response: bad compression")), false},
		{"unavailable", connect.NewError(connect.CodeUnavailable, io.ErrUnexpectedEOF), false},
	} {
		if got := connectionLost(tc.err); got != tc.want {
			t.Errorf("%s: connectionLost(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
