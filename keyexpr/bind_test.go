package keyexpr

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/locktag/locktag/locker/driver"
)

// testReq is a request whose values are looked up by "source.path" (or just
// "source" for bare placeholders).
type testReq map[string]string

// testSources serves the sources path, header, query, method and a; header
// rejects paths starting with "Bad".
func testSources() Sources[testReq] {
	lookup := func(source string) Source[testReq] {
		return func(path string) (Getter[testReq], error) {
			if strings.HasPrefix(path, "Bad") {
				return nil, fmt.Errorf("no such field %q", path)
			}
			k := source
			if path != "" {
				k += "." + path
			}
			return func(r testReq) (string, error) {
				if v, ok := r[k]; ok && v == "<error>" {
					return "", errGetter
				}
				return r[k], nil
			}, nil
		}
	}
	return Sources[testReq]{"path": lookup("path"), "header": lookup("header"), "query": lookup("query"), "method": lookup("method"), "a": lookup("a"), "b": lookup("b")}
}

var errGetter = errors.New("getter failed")

func mustBind(t testing.TB, tmpl string, opts ...BindOption) *Key[testReq] {
	t.Helper()
	tm, err := Compile(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	k, err := Bind(tm, testSources(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestBindErrors(t *testing.T) {
	tm, _ := Compile("x:{path.id}:{pth.id}")
	_, err := Bind(tm, testSources())
	var te *TemplateError
	if !errors.Is(err, ErrUnknownSource) || !errors.As(err, &te) || te.Placeholder != "{pth.id}" || te.Pos != 12 {
		t.Errorf("unknown source: %v", err)
	}
	if want := `keyexpr: template "x:{path.id}:{pth.id}": placeholder {pth.id} at byte 12: unknown source "pth" (known sources: a, b, header, method, path, query)`; err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}

	tm, _ = Compile("u:{header.Bad-Name}")
	_, err = Bind(tm, testSources())
	if err == nil || !errors.As(err, &te) || te.Placeholder != "{header.Bad-Name}" || !strings.Contains(err.Error(), `no such field "Bad-Name"`) {
		t.Errorf("source error: %v", err)
	}

	nilGetter := Sources[testReq]{"a": func(string) (Getter[testReq], error) { return nil, nil }}
	tm, _ = Compile("{a}")
	if _, err := Bind(tm, nilGetter); err == nil {
		t.Error("a source returning a nil getter must fail Bind")
	}
	if _, err := Bind(tm, Sources[testReq]{"a": nil}); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("nil source: %v", err)
	}
	if _, err := Bind[testReq](nil, testSources()); err == nil {
		t.Error("Bind(nil) must fail")
	}
	// driver.ErrBadOption is locker.ErrBadOption (locker's TestSentinelsReexported).
	if _, err := Bind(tm, testSources(), WithMaxValueLen(0)); !errors.Is(err, driver.ErrBadOption) || !strings.HasPrefix(err.Error(), "locker: bad option: keyexpr.WithMaxValueLen(0)") {
		t.Errorf("WithMaxValueLen(0): %v, want driver.ErrBadOption naming it", err)
	}
}

func TestBindPassesPath(t *testing.T) {
	var got []string
	src := Sources[testReq]{
		"req": func(path string) (Getter[testReq], error) {
			got = append(got, path)
			return func(testReq) (string, error) { return "v", nil }, nil
		},
	}
	tm, _ := Compile("{req.item.sku}:{req}:{req.id}")
	k, err := Bind(tm, src)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "item.sku,,id" || k.Template() != tm {
		t.Errorf("paths %q", got)
	}
}

func TestEval(t *testing.T) {
	long := strings.Repeat("x", 256)
	tests := []struct {
		tmpl string
		req  testReq
		want string
	}{
		{"order:{path.id}", testReq{"path.id": "42"}, "order:42"},
		{"global", nil, "global"},
		{"{{x}}:{path.id}:}}", testReq{"path.id": "1"}, "{x}:1:}"},
		{"user:{header.X-User-Id}:cart", testReq{"header.X-User-Id": "u-1_2.3~Ab"}, "user:u-1_2.3~Ab:cart"},
		{"{method}:{path.id}", testReq{"method": "POST", "path.id": "7"}, "POST:7"},
		{"v:{path.id}", testReq{"path.id": long}, "v:" + long},
		// Escaping: the fixed set.
		{"o:{path.id}", testReq{"path.id": "a:b"}, "o:a%3Ab"},
		{"o:{path.id}", testReq{"path.id": "100%"}, "o:100%25"},
		{"o:{path.id}", testReq{"path.id": "{tag}"}, "o:%7Btag%7D"},
		{"o:{path.id}", testReq{"path.id": "a b\tc\x00\x7f"}, "o:a%20b%09c%00%7F"},
		{"o:{path.id}", testReq{"path.id": "/-._~!$&'()*+,;=@[]|\"`\\^?#<>"}, "o:/-._~!$&'()*+,;=@[]|\"`\\^?#<>"},
		// Valid UTF-8 is kept; invalid bytes are escaped.
		{"o:{path.id}", testReq{"path.id": "héllo, 世界 \uFFFD"}, "o:héllo,%20世界%20\uFFFD"},
		{"o:{path.id}", testReq{"path.id": "a\xffb\xe4\xb8c"}, "o:a%FFb%E4%B8c"},
		// Separators between placeholders are escaped in every value.
		{"{path.a}-{path.b}", testReq{"path.a": "x-y", "path.b": "z-w"}, "x%2Dy-z%2Dw"},
		{"{path.a}/{path.b}.json", testReq{"path.a": "a/b.c", "path.b": "d/e.f"}, "a%2Fb.c/d%2Fe.f.json"},
		{"{path.a}-{path.b}", testReq{"path.a": "no:sep", "path.b": "_"}, "no%3Asep-_"},
		// Literals are emitted as is, values never shorten the key.
		{"{path.a}:{path.b}", testReq{"path.a": "a:b", "path.b": "c"}, "a%3Ab:c"},
		{"{path.a}:{path.b}", testReq{"path.a": "a", "path.b": "b:c"}, "a:b%3Ac"},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl+"/"+tt.want, func(t *testing.T) {
			got, err := mustBind(t, tt.tmpl).Eval(tt.req)
			if err != nil || got != tt.want {
				t.Errorf("Eval = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	long := strings.Repeat("x", 257)
	tests := []struct {
		tmpl string
		req  testReq
		want error
		ph   string
		pos  int
	}{
		{"order:{path.id}", testReq{}, ErrMissingValue, "{path.id}", 6},
		{"order:{path.id}", testReq{"path.id": ""}, ErrMissingValue, "{path.id}", 6},
		{"{method}:{path.id}", testReq{"method": "GET"}, ErrMissingValue, "{path.id}", 9},
		{"o:{path.id}", testReq{"path.id": long}, ErrValueTooLong, "{path.id}", 2},
		{"o:{path.id}", testReq{"path.id": "<error>"}, errGetter, "{path.id}", 2},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			got, err := mustBind(t, tt.tmpl).Eval(tt.req)
			var te *TemplateError
			if !errors.Is(err, tt.want) || !errors.As(err, &te) || te.Placeholder != tt.ph || te.Pos != tt.pos || got != "" {
				t.Errorf("Eval = %q, %v; want %v at %s byte %d", got, err, tt.want, tt.ph, tt.pos)
			}
		})
	}
	_, err := mustBind(t, "o:{path.id}").Eval(testReq{"path.id": long})
	if want := `keyexpr: template "o:{path.id}": placeholder {path.id} at byte 2: value too long: 257 bytes, the cap is 256`; err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestEvalLongValues(t *testing.T) {
	sum := func(v string) string { s := sha256.Sum256([]byte(v)); return hex.EncodeToString(s[:]) }
	k := mustBind(t, "o:{path.id}:{path.x}", WithMaxValueLen(4), WithHashLong(true))
	got, err := k.Eval(testReq{"path.id": "abcde", "path.x": "ab:d"})
	if want := "o:%sha256" + sum("abcde") + ":ab%3Ad"; err != nil || got != want {
		t.Errorf("Eval = %q, %v; want %q", got, err, want)
	}
	// The cap is on the raw value, not the escaped one.
	if got, err := k.Eval(testReq{"path.id": "::::", "path.x": "é"}); err != nil || got != "o:%3A%3A%3A%3A:é" {
		t.Errorf("Eval = %q, %v", got, err)
	}
	// A value that looks like a hashed value is escaped differently.
	if got, _ := k.Eval(testReq{"path.id": "%sha", "path.x": "1"}); got != "o:%25sha:1" {
		t.Errorf("Eval = %q", got)
	}
	k = mustBind(t, "o:{path.id}", WithMaxValueLen(4))
	if _, err := k.Eval(testReq{"path.id": "abcde"}); !errors.Is(err, ErrValueTooLong) {
		t.Errorf("reject mode: %v", err)
	}
	if got, err := k.Eval(testReq{"path.id": "abcd"}); err != nil || got != "o:abcd" {
		t.Errorf("at the cap: %q, %v", got, err)
	}
}

func TestEvalConcurrent(t *testing.T) {
	k := mustBind(t, "o:{path.id}:{header.X}")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				id := fmt.Sprint(i, ":", j)
				got, err := k.Eval(testReq{"path.id": id, "header.X": "h"})
				if want := "o:" + strings.ReplaceAll(id, ":", "%3A") + ":h"; err != nil || got != want {
					t.Errorf("Eval = %q, %v; want %q", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestEvalAllocs(t *testing.T) {
	k := mustBind(t, "user:{header.X-User-Id}:cart:{path.id}:{method}")
	r := testReq{"header.X-User-Id": "u-123", "path.id": "42", "method": "POST"}
	if n := testing.AllocsPerRun(100, func() { _, _ = k.Eval(r) }); n > 1 {
		t.Errorf("Eval allocates %v times, want at most 1", n)
	}
}

func TestBindSpecPositions(t *testing.T) {
	src := Sources[string]{"path": func(string) (Getter[string], error) {
		return func(r string) (string, error) { return r, nil }, nil
	}}
	for _, tc := range []struct {
		tag string
		pos int
	}{
		{`key:"a:{nope.x}"`, 7},                // exact: at the placeholder's '{'
		{`wait:"1s" key:"a:{nope.x}"`, 17},     // after another field
		{`key:"\u0061:{nope.x}" wait:"1s"`, 4}, // escaped value: at the opening quote
	} {
		spec := MustParseTag(tc.tag)
		_, err := BindSpec(spec, src)
		var te *TagError
		if !errors.As(err, &te) || te.Pos != tc.pos || te.Field != "key" || !errors.Is(err, ErrUnknownSource) {
			t.Errorf("%s: err %v (pos %v), want a key TagError at %d", tc.tag, err, te, tc.pos)
		}
	}
	k, err := BindSpec(MustParseTag(`key:"a:{path.x}" long:"hash"`), src, WithMaxValueLen(4))
	if err != nil {
		t.Fatal(err)
	}
	if name, err := k.Eval("too-long-value"); err != nil || !strings.HasPrefix(name, "a:%sha256") {
		t.Fatalf("BindSpec does not apply the tag's long:\"hash\": %q %v", name, err)
	}
}
