// Package integration holds tests that need heavy test-only tooling — the
// OpenTelemetry SDK, a headless browser, third-party routers, Gin for the
// documentation checks — in a module of their own, so that no library
// module requires them.
package integration
