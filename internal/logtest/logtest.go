// Package logtest captures log/slog records for tests, so a test can count
// the records a component wrote and read their attributes.
package logtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Record is one captured record: its level, message, and attributes
// (those of the logger's With as well) formatted with %v.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

// Recorder keeps every record of the loggers made by New. It is safe for
// concurrent use.
type Recorder struct {
	mu   sync.Mutex
	recs []Record
}

// New returns a logger that records everything, at every level, and its
// Recorder.
func New() (*slog.Logger, *Recorder) {
	r := &Recorder{}
	return slog.New(&handler{r: r}), r
}

// Records returns a copy of the records so far, oldest first.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}

// Matching returns the records whose message contains substr.
func (r *Recorder) Matching(substr string) []Record {
	var out []Record
	for _, rec := range r.Records() {
		if strings.Contains(rec.Message, substr) {
			out = append(out, rec)
		}
	}
	return out
}

// String lists the records, one a line, for failure messages.
func (r *Recorder) String() string {
	var b strings.Builder
	for _, rec := range r.Records() {
		fmt.Fprintf(&b, "%s %q %v\n", rec.Level, rec.Message, rec.Attrs)
	}
	return b.String()
}

type handler struct {
	r     *Recorder
	attrs []slog.Attr
}

func (h *handler) Enabled(context.Context, slog.Level) bool { return true }

func (h *handler) Handle(_ context.Context, rec slog.Record) error {
	attrs := make(map[string]string, len(h.attrs)+rec.NumAttrs())
	for _, a := range h.attrs {
		attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	h.r.mu.Lock()
	h.r.recs = append(h.r.recs, Record{Level: rec.Level, Message: rec.Message, Attrs: attrs})
	h.r.mu.Unlock()
	return nil
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{r: h.r, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup is ignored: attributes keep their own keys.
func (h *handler) WithGroup(string) slog.Handler { return h }

// Buffer is a bytes.Buffer that a logger (or a server) may write while a
// test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
