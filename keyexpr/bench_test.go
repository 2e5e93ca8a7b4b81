package keyexpr

import (
	"strings"
	"testing"
)

type benchReq struct{ user, id, method string }

func benchSources() Sources[*benchReq] {
	return Sources[*benchReq]{
		"header": func(string) (Getter[*benchReq], error) {
			return func(r *benchReq) (string, error) { return r.user, nil }, nil
		},
		"path": func(string) (Getter[*benchReq], error) {
			return func(r *benchReq) (string, error) { return r.id, nil }, nil
		},
		"method": func(string) (Getter[*benchReq], error) {
			return func(r *benchReq) (string, error) { return r.method, nil }, nil
		},
	}
}

func benchKey(b *testing.B, tmpl string, opts ...BindOption) *Key[*benchReq] {
	b.Helper()
	tm, err := Compile(tmpl)
	if err != nil {
		b.Fatal(err)
	}
	k, err := Bind(tm, benchSources(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

func BenchmarkEval(b *testing.B) {
	cases := []struct {
		name string
		tmpl string
		req  benchReq
		opts []BindOption
	}{
		{"2ph", "order:{path.id}:user:{header.X-User-Id}", benchReq{user: "u-12345", id: "987654321"}, nil},
		{"3ph", "{method}:user:{header.X-User-Id}:cart:{path.id}", benchReq{user: "u-12345", id: "987654321", method: "POST"}, nil},
		{"3ph-escape", "{method}:user:{header.X-User-Id}:cart:{path.id}", benchReq{user: "a b:c", id: "{42}", method: "POST"}, nil},
		{"over-128B", "{method}:user:{header.X-User-Id}:cart:{path.id}", benchReq{user: strings.Repeat("u", 200), id: "987654321", method: "POST"}, nil},
		{"hash-long", "order:{path.id}", benchReq{id: strings.Repeat("x", 300)}, []BindOption{WithHashLong(true)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			k := benchKey(b, c.tmpl, c.opts...)
			r := c.req
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Eval(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParseTag(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTag(`key:"order:{path.id}:user:{header.X-User-Id}" expire:"30s" wait:"2s"`); err != nil {
			b.Fatal(err)
		}
	}
}
