package keyexpr

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseTagKeys(t *testing.T) {
	tests := []struct {
		tag  string
		want []string
	}{
		{`keys:"acct:{body.from},acct:{body.to}" wait:"1s"`, []string{"acct:{body.from}", "acct:{body.to}"}},
		{`keys:"a, b ,c"`, []string{"a", "b", "c"}},
		{`keys:"one"`, []string{"one"}},
		{`keys:"a:{{x,y}}:{path.id},b"`, []string{"a:{{x", "y}}:{path.id}", "b"}},
		{`keys:"a:{path.id},a:{path.id}" keep:"1s"`, []string{"a:{path.id}", "a:{path.id}"}},
	}
	for _, tt := range tests {
		s, err := ParseTag(tt.tag)
		if err != nil {
			t.Errorf("ParseTag(%s): %v", tt.tag, err)
			continue
		}
		var got []string
		for _, k := range s.Templates() {
			got = append(got, k.String())
		}
		if s.Key != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseTag(%s): Key %v, Templates %q, want %q", tt.tag, s.Key, got, tt.want)
		}
	}
	s := MustParseTag(`key:"a"`)
	if ts := s.Templates(); len(ts) != 1 || ts[0] != s.Key || s.Keys != nil {
		t.Errorf("a key tag's Templates = %v", ts)
	}
}

func TestParseTagKeysErrors(t *testing.T) {
	many := strings.Repeat("k,", MaxKeys) + "k"
	tests := []struct {
		tag   string
		want  error
		field string
		pos   int
		msg   string
	}{
		{`keys:""`, ErrMissingKey, "keys", 5, "empty keys"},
		{`keys:"a,,b"`, ErrMissingKey, "keys", 8, "key template 2 of keys is empty"},
		{`keys:"a,"`, ErrMissingKey, "keys", 8, "key template 2 of keys is empty"},
		{`keys:" , a"`, ErrMissingKey, "keys", 7, "key template 1 of keys is empty"},
		{`keys:"a,b:{path.}"`, ErrSyntax, "keys", 10, "empty path"},
		{`keys:"a, b:{path.id"`, ErrSyntax, "keys", 11, "unmatched '{'"},
		{`keys:"` + many + `"`, ErrBadValue, "keys", 6 + 2*MaxKeys, "at most 16"},
		{`key:"a" keys:"b,c"`, ErrBadValue, "keys", 8, "key with keys"},
		{`keys:"b,c" key:"a"`, ErrBadValue, "key", 11, "key with keys"},
		{`keys:"a,b" limit:"2"`, ErrBadValue, "limit", 11, "keys with limit"},
		{`mode:"read" keys:"a,b"`, ErrBadValue, "keys", 12, "keys with mode"},
		{`keys:"a" keys:"b"`, ErrDuplicateField, "keys", 9, "duplicate field"},
		// An escape in the value: the position is the opening quote.
		{`keys:"\u00e9,b:{path.}"`, ErrSyntax, "keys", 5, "empty path"},
	}
	for _, tt := range tests {
		_, err := ParseTag(tt.tag)
		var te *TagError
		if !errors.Is(err, tt.want) || !errors.As(err, &te) {
			t.Errorf("ParseTag(%s): %v, want %v", tt.tag, err, tt.want)
			continue
		}
		if te.Field != tt.field || te.Pos != tt.pos || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseTag(%s): field %q pos %d (%v), want %q %d %q", tt.tag, te.Field, te.Pos, err, tt.field, tt.pos, tt.msg)
		}
	}
}

func TestNewSpecKeys(t *testing.T) {
	s, err := NewSpec(Fields{Keys: "acct:{req.from},acct:{req.to}", Wait: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tag != `keys:"acct:{req.from},acct:{req.to}" wait:"1s"` || len(s.Keys) != 2 || s.Key != nil {
		t.Fatalf("NewSpec = %+v", s)
	}
	_, err = NewSpec(Fields{Keys: "a,b:{req.}"})
	var te *TagError
	if !errors.As(err, &te) || te.Field != "keys" || te.Pos != 10 || !errors.Is(err, ErrSyntax) {
		t.Fatalf("NewSpec bad keys: %v", err)
	}
	_, err = NewSpec(Fields{Key: "a", Keys: "b,c"})
	if !errors.As(err, &te) || te.Field != "keys" || !errors.Is(err, ErrBadValue) {
		t.Fatalf("NewSpec key and keys: %v", err)
	}
	_, err = NewSpec(Fields{Keys: "a,b", Mode: "write"})
	if !errors.Is(err, ErrBadValue) {
		t.Fatalf("NewSpec keys and mode: %v", err)
	}
}

func TestBindKeys(t *testing.T) {
	src := Sources[map[string]string]{"v": func(path string) (Getter[map[string]string], error) {
		return func(r map[string]string) (string, error) { return r[path], nil }, nil
	}}
	s := MustParseTag(`keys:"acct:{v.from}, acct:{v.to}"`)
	keys, err := BindKeys(s, src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		v, err := k.Eval(map[string]string{"from": "1", "to": "2"})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []string{"acct:1", "acct:2"}) {
		t.Fatalf("keys %q", got)
	}
	_, err = BindKeys(MustParseTag(`keys:"a:{v.x},b:{w.y}"`), src)
	var te *TagError
	if !errors.As(err, &te) || te.Pos != 16 || te.Field != "keys" || !errors.Is(err, ErrUnknownSource) {
		t.Fatalf("BindKeys unknown source: %v", err)
	}
}
