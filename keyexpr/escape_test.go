package keyexpr

import (
	"strings"
	"testing"
)

func TestAppendEscaped(t *testing.T) {
	tbl := newEscapeTable([]byte("-"))
	tests := []struct{ in, want string }{
		{"plain-ASCII_1.2~", "plain%2DASCII_1.2~"},
		{"", ""},
		{"%3A", "%253A"},
		{"\x00\x1f \x7f", "%00%1F%20%7F"},
		{"日本語", "日本語"},
		{"\xe6\x97", "%E6%97"},        // truncated UTF-8
		{"\xc0\xaf", "%C0%AF"},        // overlong encoding
		{"\xed\xa0\x80", "%ED%A0%80"}, // surrogate half
		{"\uFFFD", "\uFFFD"},          // a real U+FFFD is valid UTF-8
	}
	for _, tt := range tests {
		if got := string(appendEscaped(nil, tt.in, &tbl)); got != tt.want {
			t.Errorf("appendEscaped(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, err := unescape(string(appendEscaped(nil, tt.in, &tbl))); err != nil || got != tt.in {
			t.Errorf("unescape(escape(%q)) = %q, %v", tt.in, got, err)
		}
	}
}

// TestSeparatorEscapeIsNeeded is the control for the injectivity checks: with
// the separator left out of the escape set, two tuples collide and the decoder
// in checkDecode cannot recover the values.
func TestSeparatorEscapeIsNeeded(t *testing.T) {
	tm, err := Compile("{a}-{b}")
	if err != nil {
		t.Fatal(err)
	}
	broken := *tm
	broken.esc = newEscapeTable(nil)
	eval := func(tm *Template, a, b string) string {
		k, err := Bind(tm, indexSources(tm.Placeholders()))
		if err != nil {
			t.Fatal(err)
		}
		name, err := k.Eval([]string{a, b})
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	if n1, n2 := eval(&broken, "a-b", "c"), eval(&broken, "a", "b-c"); n1 != n2 {
		t.Fatalf("control: without the separator escape %q and %q should collide", n1, n2)
	}
	if n1, n2 := eval(tm, "a-b", "c"), eval(tm, "a", "b-c"); n1 == n2 {
		t.Fatalf("%q == %q", n1, n2)
	}
}

func TestHashedFormHasNoSeparators(t *testing.T) {
	b := appendHashed(nil, strings.Repeat("x", 1000))
	if len(b) != len(hashMarker)+64 || !strings.HasPrefix(string(b), hashMarker) {
		t.Fatalf("appendHashed = %q", b)
	}
	for _, c := range b[1:] {
		if separatorOK(c) {
			t.Fatalf("hashed form %q contains separator %q", b, c)
		}
	}
}

func TestEscapeMatchesTemplate(t *testing.T) {
	src := Sources[string]{"path": func(string) (Getter[string], error) {
		return func(r string) (string, error) { return r, nil }, nil
	}}
	k, err := BindSpec(MustParseTag(`key:"order:{path.id}"`), src)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"42", "a:b", "{x}", "100%", "a b\r\n", "\xff\xfe", "日本"} {
		name, err := k.Eval(v)
		if err != nil {
			t.Fatal(err)
		}
		if manual := "order:" + Escape(v); manual != name {
			t.Errorf("Escape(%q): %q, template gives %q", v, manual, name)
		}
	}
}
