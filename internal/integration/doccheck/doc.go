// Package doccheck holds tests that keep the documentation true: every
// relative link and anchor in README.md, CHANGELOG.md and docs/ resolves,
// and every problem type URL the HTTP adapter emits names a section that
// exists. It has no code of its own.
package doccheck
