package guard

import (
	"context"
	"strings"
	"testing"
)

// TestIdempotencyFreesKey: the cases in which the key is freed, so the
// retry executes, and those in which the answer is stored and replayed.
func TestIdempotencyFreesKey(t *testing.T) {
	lk := newLocker(t)
	g, err := NewIdempotency[req](lk, "T1", WithPublicScope(), WithMaxResponseBytes(8),
		WithServerErrorPolicy(ReleaseServerErrors))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := CompileLock(lk, `key:"l:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	ok := Answer{Status: 200, Payload: []byte("ok"), Sent: true}
	for _, tc := range []struct {
		name   string
		first  func(ctx context.Context) Answer
		replay bool // the retry replays; else it executes
	}{
		{"stored", func(context.Context) Answer { return ok }, true},
		{"lock guard refused inside", func(ctx context.Context) Answer {
			lock.Run(ctx, req{}, "", nil) // bad key: refused
			return Answer{Status: 400, Payload: []byte("bad"), Sent: true}
		}, false},
		{"no answer", func(context.Context) Answer { return Answer{None: true} }, false},
		{"server error released", func(context.Context) Answer { return Answer{Status: 500, ServerError: true, Sent: true} }, false},
		{"oversize kept", func(context.Context) Answer { return Answer{Status: 200, Payload: []byte("123456789"), Sent: true} }, true},
		{"panic", func(context.Context) Answer { panic("boom") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := Request{Route: "r", Keys: []string{strings.ReplaceAll(tc.name, " ", "-")}}
			func() {
				defer func() { _ = recover() }()
				if o := g.Run(t.Context(), nil, q, tc.first); o.Kind != OK {
					t.Fatalf("first: %+v", o)
				}
			}()
			ran := false
			o := g.Run(t.Context(), nil, q, func(context.Context) Answer { ran = true; return ok })
			switch {
			case tc.replay && tc.name == "oversize kept":
				if o.Kind != NotStored || o.Record.Status != 200 || ran {
					t.Fatalf("retry: %+v, ran %v; want NotStored", o, ran)
				}
			case tc.replay:
				if o.Kind != Replay || string(o.Record.Payload) != "ok" || ran {
					t.Fatalf("retry: %+v, ran %v; want a replay", o, ran)
				}
			default:
				if o.Kind != OK || !ran {
					t.Fatalf("retry: %+v, ran %v; want an execution", o, ran)
				}
			}
		})
	}
}

// TestIdempotencyRefusals: what is refused before Redis is touched.
func TestIdempotencyRefusals(t *testing.T) {
	lk := newLocker(t)
	g, err := NewIdempotency[req](lk, "T1", WithScope(func(r req) (string, error) { return r["user"], nil }),
		WithMaxRequestBytes(4))
	if err != nil {
		t.Fatal(err)
	}
	body := func(b string) func(int64) ([]byte, error) {
		return func(int64) ([]byte, error) { return []byte(b), nil }
	}
	for _, tc := range []struct {
		name string
		r    req
		q    Request
		want Kind
	}{
		{"missing", req{"user": "a"}, Request{}, MissingIdempotencyKey},
		{"twice", req{"user": "a"}, Request{Keys: []string{"k", "k"}}, BadIdempotencyKey},
		{"malformed", req{"user": "a"}, Request{Keys: []string{"a b"}}, BadIdempotencyKey},
		{"no scope", req{}, Request{Keys: []string{"k"}}, NoScope},
		{"body too large", req{"user": "a"}, Request{Keys: []string{"k"}, Body: body("12345")}, TooLarge},
	} {
		ran := false
		o := g.Run(t.Context(), tc.r, tc.q, func(context.Context) Answer { ran = true; return Answer{} })
		if o.Kind != tc.want || ran || !o.Idempotency {
			t.Errorf("%s: %+v, ran %v; want %v", tc.name, o, ran, tc.want)
		}
	}
}
