// Package spantree checks the span trees docs/observability.md draws
// against recorded traces: its test records a Gin request (otelgin) and a
// gRPC call (otelgrpc) through a lock and an idempotency guard on a real
// redis-server with an in-memory span recorder, and compares the
// parent/child structure and span names with the page's drawings. It
// also builds a binary against locktag and checks the instrumentation
// scope version its spans carry.
//
// It lives in the reliability module so that otelgin and otelgrpc stay
// test-only dependencies: the library's go.mod does not require them.
package spantree
