// Package promdoc checks docs/observability.md against what a Prometheus
// exporter really produces: its test scrapes the OpenTelemetry Prometheus
// exporter after real lock traffic on a real redis-server and asserts that
// every metric and label name the page's PromQL uses exists.
//
// It lives in the reliability module so that the exporter and
// client_golang stay test-only dependencies: the library's go.mod (what
// users download) does not require them.
package promdoc
