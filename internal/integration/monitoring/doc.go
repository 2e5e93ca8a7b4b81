// Package monitoring keeps the shipped Grafana dashboard and Prometheus
// alerting rules (docs/monitoring) known to work. Its test runs a small
// service with real lock traffic on a real redis-server, exposes
// locktag's metrics through the OpenTelemetry Prometheus exporter, has a
// real Prometheus (Debian's prometheus package, started on a free
// loopback port with its own config and storage) scrape it with the
// rules loaded, and checks that every dashboard query returns data and
// that a lost lock and a Redis outage fire the matching alerts. It also
// checks the rules file with promtool and keeps it equal to the rules in
// docs/operations.md.
//
// The package's own code reads the dashboard, talks to Prometheus's HTTP
// API, starts a Prometheus process and renders the dashboard's panels
// from query_range results as a static HTML page (inline SVG) that
// headless Chromium can screenshot; command dashshot does that for any
// Prometheus. It lives in the integration module so that the exporter
// and client_golang stay test-only dependencies.
package monitoring
