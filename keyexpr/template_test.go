package keyexpr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCompile(t *testing.T) {
	tests := []struct {
		tmpl string
		phs  []Placeholder
	}{
		{"global", nil},
		{"order:{path.id}", []Placeholder{{"path", "id", 6}}},
		{"user:{header.X-User-Id}:cart", []Placeholder{{"header", "X-User-Id", 5}}},
		{"sku:{req.item.sku}", []Placeholder{{"req", "item.sku", 4}}},
		{"{method}:{route}", []Placeholder{{"method", "", 0}, {"route", "", 9}}},
		{"{ctx.user}-{path.id}/{query.v}", []Placeholder{{"ctx", "user", 0}, {"path", "id", 11}, {"query", "v", 21}}},
		{"{{x}}:{a_1.b}", []Placeholder{{"a_1", "b", 6}}},
		{"{a}{{{b}}}", []Placeholder{{"a", "", 0}, {"b", "", 5}}},
		{"{a} {b}", []Placeholder{{"a", "", 0}, {"b", "", 4}}},
		{"{body.a-b c}", []Placeholder{{"body", "a-b c", 0}}},
		{"é:{a}", []Placeholder{{"a", "", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			tm, err := Compile(tt.tmpl)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if tm.String() != tt.tmpl {
				t.Errorf("String() = %q", tm.String())
			}
			if got := tm.Placeholders(); !reflect.DeepEqual(got, tt.phs) {
				t.Errorf("Placeholders() = %+v, want %+v", got, tt.phs)
			}
			for _, ph := range tm.Placeholders() {
				if !strings.HasPrefix(tt.tmpl[ph.Pos:], ph.String()) {
					t.Errorf("%v is not at byte %d", ph, ph.Pos)
				}
			}
		})
	}
}

func TestPlaceholdersIsACopy(t *testing.T) {
	tm, _ := Compile("a:{path.id}")
	tm.Placeholders()[0].Source = "x"
	if tm.Placeholders()[0].Source != "path" {
		t.Error("changing the returned slice changed the template")
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		tmpl string
		pos  int
		ph   string
		msg  string
	}{
		{"", 0, "", "empty template"},
		{"order:{path.id", 6, "", "unmatched '{'"},
		{"order:{", 6, "", "unmatched '{'"},
		{"order:}", 6, "", "unmatched '}'"},
		{"a}}}", 3, "", "unmatched '}'"},
		{"{{{", 2, "", "unmatched '{'"},
		{"x{a{b}}", 3, "", "'{' inside a placeholder"},
		{"x:{}", 2, "{}", "empty placeholder"},
		{"x:{.id}", 2, "{.id}", "empty source"},
		{"x:{path.}", 2, "{path.}", "empty path"},
		{"x:{body.a..b}", 2, "{body.a..b}", "empty segment"},
		{"x:{body..a}", 2, "{body..a}", "empty segment"},
		{"x:{body.a.}", 2, "{body.a.}", "empty segment"},
		{"x:{Path.id}", 2, "{Path.id}", "bad source name"},
		{"x:{1a}", 2, "{1a}", "bad source name"},
		{"x:{pa th.id}", 2, "{pa th.id}", "bad source name"},
		{"x:{path-x.id}", 2, "{path-x.id}", "bad source name"},
		{"{a}{b}", 3, "{b}", "adjacent placeholders"},
		{"x:{a.b}{c.d}:y", 7, "{c.d}", "adjacent placeholders"},
		{"{a}x{b}", 3, "", "must start with a separator"},
		{"{a}9{b}", 3, "", "must start with a separator"},
		{"{a}%{b}", 3, "", "must start with a separator"},
		{"{a}é{b}", 3, "", "must start with a separator"},
		{"{a}:{b}Z{c}", 7, "", "must start with a separator"},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			tm, err := Compile(tt.tmpl)
			if err == nil {
				t.Fatalf("Compile = %v, want error", tm)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("%v is not ErrSyntax", err)
			}
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("%T is not a *TemplateError", err)
			}
			if te.Template != tt.tmpl || te.Pos != tt.pos || te.Placeholder != tt.ph {
				t.Errorf("TemplateError{%q, %q, %d}, want {%q, %q, %d}", te.Template, te.Placeholder, te.Pos, tt.tmpl, tt.ph, tt.pos)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), "keyexpr: template ") {
				t.Errorf("message %q, want %q", err, tt.msg)
			}
		})
	}
}

func TestTemplateErrorMessage(t *testing.T) {
	_, err := Compile("order:{path.}")
	want := `keyexpr: template "order:{path.}": placeholder {path.} at byte 6: syntax error: empty path after "path."`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
