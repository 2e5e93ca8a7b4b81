// Package logs writes the Locker's log records: a lock or an idempotency
// claim lost while held (Error), a release that failed (Warn, or Debug
// for one already lost), and a force-release's audit record. Messages
// and attribute keys are the locktag.* names lockotel's spans carry; the
// resolved key appears only when the Locker was built with
// WithKeyAttribute(true). docs/operations.md lists the records.
package logs
