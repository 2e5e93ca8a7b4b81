package keyexpr

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseTag(t *testing.T) {
	tests := []struct {
		tag    string
		key    string
		expire time.Duration
		wait   time.Duration
		name   string
		hash   bool
		limit  int
		keep   time.Duration
		mode   string
	}{
		{tag: `key:"order:{path.id}"`, key: "order:{path.id}"},
		{tag: `key:"order:{path.id}" expire:"30s" wait:"2s"`, key: "order:{path.id}", expire: 30 * time.Second, wait: 2 * time.Second},
		{tag: `  wait:"0"   key:"a"  `, key: "a"},
		{tag: `key:"a" wait:"1m30s" expire:"1ms" name:"pay" long:"hash"`, key: "a", expire: time.Millisecond, wait: 90 * time.Second, name: "pay", hash: true},
		{tag: `key:"a" long:"reject"`, key: "a"},
		{tag: `key:"user:{header.X-User-Id}:cart"`, key: "user:{header.X-User-Id}:cart"},
		{tag: `key:"sku:{req.item.sku}" name:"reserve stock"`, key: "sku:{req.item.sku}", name: "reserve stock"},
		{tag: `key:"a\tb\u00e9"`, key: "a\tb\u00e9"},
		{tag: `key:"{{literal}}:{path.id}"`, key: "{{literal}}:{path.id}"},
		{tag: `key:"tenant:{header.X-Tenant}" limit:"10" wait:"1s"`, key: "tenant:{header.X-Tenant}", wait: time.Second, limit: 10},
		{tag: `key:"a" limit:"1"`, key: "a", limit: 1},
		{tag: `key:"pay:{path.id}" keep:"10s"`, key: "pay:{path.id}", keep: 10 * time.Second},
		{tag: `key:"item:{path.id}" mode:"read" wait:"1s"`, key: "item:{path.id}", wait: time.Second, mode: "read"},
		{tag: `key:"item:{path.id}" mode:"write"`, key: "item:{path.id}", mode: "write"},
		{tag: `key:"a" limit:"1048576"`, key: "a", limit: MaxLimit},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			s, err := ParseTag(tt.tag)
			if err != nil {
				t.Fatalf("ParseTag: %v", err)
			}
			if s.Tag != tt.tag || s.Key.String() != tt.key || s.Expire != tt.expire || s.Wait != tt.wait || s.Name != tt.name || s.HashLong != tt.hash || s.Limit != tt.limit || s.Keep != tt.keep || s.Mode != tt.mode {
				t.Errorf("got %+v (key %q), want key %q expire %v wait %v name %q hash %v",
					*s, s.Key, tt.key, tt.expire, tt.wait, tt.name, tt.hash)
			}
			// Every tag we accept reads the same under reflect.StructTag.
			if v, ok := reflect.StructTag(tt.tag).Lookup("key"); !ok || v != tt.key {
				t.Errorf("reflect.StructTag reads key %q, %v", v, ok)
			}
		})
	}
}

func TestParseTagErrors(t *testing.T) {
	tests := []struct {
		tag   string
		want  error
		field string
		pos   int
		msg   string // substring of the message
	}{
		{``, ErrMissingKey, "key", 0, "missing key"},
		{`   `, ErrMissingKey, "key", 0, "missing key"},
		{`wait:"1s"`, ErrMissingKey, "key", 0, "missing key"},
		{`key:""`, ErrMissingKey, "key", 4, "missing key"},
		{`key:"a" expiry:"3s"`, ErrUnknownField, "expiry", 8, `unknown field "expiry"`},
		{`Key:"a"`, ErrUnknownField, "Key", 0, `unknown field "Key"`},
		{`key:"a" key:"b"`, ErrDuplicateField, "key", 8, `duplicate field "key"`},
		{`key:"a" wait:"1s" wait:"1s"`, ErrDuplicateField, "wait", 18, "duplicate field"},
		{`key:"a" expire:"3x"`, ErrBadDuration, "expire", 15, `bad duration: "3x"`},
		{`key:"a" expire:"30"`, ErrBadDuration, "expire", 15, "bad duration"},
		{`key:"a" expire:"0"`, ErrBadDuration, "expire", 15, "omit expire for watchdog mode"},
		{`key:"a" expire:"500us"`, ErrBadDuration, "expire", 15, "at least 1ms"},
		{`key:"a" expire:"-1s"`, ErrBadDuration, "expire", 15, "must not be negative"},
		{`key:"a" wait:"-1ms"`, ErrBadDuration, "wait", 13, "must not be negative"},
		{`key:"a" wait:""`, ErrBadDuration, "wait", 13, "bad duration"},
		{`key:"a" long:"maybe"`, ErrBadValue, "long", 13, `long "maybe"`},
		{`key:"a" name:""`, ErrBadValue, "name", 13, "empty name"},
		{`key:"a" limit:"0"`, ErrBadValue, "limit", 14, `limit "0": want a whole number of permits from 1`},
		{`key:"a" limit:"-2"`, ErrBadValue, "limit", 14, `limit "-2"`},
		{`key:"a" limit:"ten"`, ErrBadValue, "limit", 14, `limit "ten"`},
		{`key:"a" limit:"+3"`, ErrBadValue, "limit", 14, `limit "+3"`},
		{`key:"a" limit:"03"`, ErrBadValue, "limit", 14, `limit "03"`},
		{`key:"a" limit:""`, ErrBadValue, "limit", 14, `limit ""`},
		{`key:"a" limit:"1048577"`, ErrBadValue, "limit", 14, "to 1048576"},
		{`key:"a" limit:"2" limit:"3"`, ErrDuplicateField, "limit", 18, "duplicate field"},
		{`key:"a" keep:"0"`, ErrBadDuration, "keep", 13, "omit keep to release at once"},
		{`key:"a" keep:"10"`, ErrBadDuration, "keep", 13, "bad duration"},
		{`key:"a" keep:"-1s"`, ErrBadDuration, "keep", 13, "must not be negative"},
		{`key:"a" keep:"1s" limit:"2"`, ErrBadValue, "limit", 18, "keep with limit"},
		{`key:"a" limit:"2" keep:"1s"`, ErrBadValue, "keep", 18, "keep with limit"},
		{`key:"a" mode:"Read"`, ErrBadValue, "mode", 13, `mode "Read": want "read" or "write"`},
		{`key:"a" mode:""`, ErrBadValue, "mode", 13, `mode ""`},
		{`key:"a" mode:"read" limit:"2"`, ErrBadValue, "limit", 20, "mode with limit"},
		{`key:"a" limit:"2" mode:"write"`, ErrBadValue, "mode", 18, "mode with limit"},
		{`key:"a" mode:"write" keep:"1s"`, ErrBadValue, "keep", 21, "mode with keep"},
		{`key:"a" lock:"read"`, ErrUnknownField, "lock", 8, `(known: key, keys, expire, wait, name, long, limit, keep, mode, rate, burst)`},
		{`key:"a"wait:"1s"`, ErrSyntax, "", 7, "missing space"},
		{`key:"a`, ErrSyntax, "key", 4, "unterminated"},
		{`key:"a\"`, ErrSyntax, "key", 4, "unterminated"},
		{`key:a`, ErrSyntax, "key", 4, `expected '"'`},
		{`key`, ErrSyntax, "key", 3, "expected ':'"},
		{`key "a"`, ErrSyntax, "key", 3, "expected ':'"},
		{`:"a"`, ErrSyntax, "", 0, "expected a field name"},
		{`"key":"a"`, ErrSyntax, "", 0, "expected a field name"},
		{"key:\"a\"\twait:\"1s\"", ErrSyntax, "", 7, "missing space"},
		{`key:"\q"`, ErrSyntax, "key", 4, "malformed quoted value"},
		{`key:'a'`, ErrSyntax, "key", 4, `expected '"'`},
		{`key:"order:{path.}"`, ErrSyntax, "key", 11, "empty path"},
		{`key:"order:{path.id"`, ErrSyntax, "key", 11, "unmatched '{'"},
		{`key:"a}"`, ErrSyntax, "key", 6, "unmatched '}'"},
		{`key:"{x.a}{x.b}"`, ErrSyntax, "key", 10, "adjacent placeholders"},
		// With an escape sequence in the value the position is the opening quote.
		{`key:"\u00e9{path.}"`, ErrSyntax, "key", 4, "empty path"},
		// So does it when unquoting replaced invalid UTF-8 with U+FFFD.
		{"key:\"\x99\xcf{\"", ErrSyntax, "key", 4, "unmatched '{'"},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			s, err := ParseTag(tt.tag)
			if err == nil {
				t.Fatalf("ParseTag = %+v, want error", s)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("error %v is not %v", err, tt.want)
			}
			var te *TagError
			if !errors.As(err, &te) {
				t.Fatalf("error %T is not a *TagError", err)
			}
			if te.Tag != tt.tag || te.Field != tt.field || te.Pos != tt.pos {
				t.Errorf("TagError{Tag %q, Field %q, Pos %d}, want {%q, %q, %d}", te.Tag, te.Field, te.Pos, tt.tag, tt.field, tt.pos)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "keyexpr: tag ") || !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q, want prefix \"keyexpr: tag \" and %q", msg, tt.msg)
			}
		})
	}
}

func TestTagErrorMessage(t *testing.T) {
	_, err := ParseTag(`key:"order:{path.id}" expire:"3x"`)
	want := "keyexpr: tag `key:\"order:{path.id}\" expire:\"3x\"`: field expire at byte 29: " +
		`bad duration: "3x": want a Go duration such as "30s" or "1m30s"`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	_, err = ParseTag("key:`x` wait:\"1s\"")
	if err == nil || !strings.Contains(err.Error(), "keyexpr: tag \"key:`x` wait:\\\"1s\\\"\"") {
		t.Errorf("a tag with a back quote is shown with %%q: %v", err)
	}
}

func TestMustParseTag(t *testing.T) {
	if s := MustParseTag(`key:"a:{path.id}"`); s.Key.String() != "a:{path.id}" {
		t.Errorf("MustParseTag = %+v", s)
	}
	tag := `key:"a" wait:"soon"`
	_, want := ParseTag(tag)
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || err.Error() != want.Error() || !errors.Is(err, ErrBadDuration) {
			t.Errorf("panic value %v, want %v", r, want)
		}
	}()
	MustParseTag(tag)
	t.Error("MustParseTag did not panic")
}
