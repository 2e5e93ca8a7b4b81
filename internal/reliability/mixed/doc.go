// Package mixed is the mixed-version test: worker processes built from the
// previous release's commit (.ci/protocol-base) and from HEAD share one
// Redis (a server, then a 3-master Cluster), kind by kind (mutex with keep
// and fences, jobs, semaphore, read/write, multi-key, idempotency, rate),
// and must show no overlap, no error, no duplicate execution, no starved
// process and the same rate as HEAD alone; a pair known not to
// interoperate (v0.10.0 with HEAD) must fail the same checks.
// .ci/mixed.sh builds the workers (cmd worker, whose source it copies into
// the old checkouts) and runs it (make mixed); without the workers the
// tests skip.
package mixed
