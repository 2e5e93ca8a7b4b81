package keyexpr

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func FuzzParseTag(f *testing.F) {
	for _, s := range []string{
		`key:"order:{path.id}" expire:"30s" wait:"2s"`,
		`key:"a" name:"n" long:"hash"`,
		`key:"\u00e9{path.}"`, `key:"a"wait:"1s"`, `key:"a\"`, `key:"a" key:"b"`,
		`key:"{x.a}{x.b}"`, `expire:"-1s"`, "", " ",
		`keys:"acct:{body.from}, acct:{body.to}" wait:"1s"`, `keys:"a,,b"`, `keys:"a,b:{p.}"`, `key:"a" keys:"b"`,
		`key:"api:{header.X-User}" rate:"100/1m" burst:"20"`, `key:"a" rate:"10/s" wait:"1s"`, `key:"a" rate:"5/100ms"`,
		`key:"a" rate:"1/8760h" burst:"1"`, `key:"a" rate:"1000000/1s"`, `key:"a" rate:"0/s"`, `key:"a" rate:"1/0s"`,
		`key:"a" rate:"1/1h" burst:"9000"`, `key:"a" burst:"2"`, `key:"a" rate:"1/s" limit:"2"`, `key:"a" rate:"1/"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		s, err := ParseTag(tag)
		if err != nil {
			var te *TagError
			if !errors.As(err, &te) {
				t.Fatalf("error %T %v is not a *TagError", err, err)
			}
			if te.Tag != tag || te.Pos < 0 || te.Pos > len(tag) || te.Err == nil {
				t.Fatalf("bad TagError %+v for %q", te, tag)
			}
			if !strings.HasPrefix(err.Error(), "keyexpr: tag ") {
				t.Fatalf("message %q", err)
			}
			// A template error inside key points at the offending byte, or
			// at the opening quote when unquoting changed the template.
			var me *TemplateError
			if errors.As(err, &me) && me.Pos < len(me.Template) && tag[te.Pos] != '"' && tag[te.Pos] != me.Template[me.Pos] {
				t.Fatalf("tag byte %d is %q, template byte %d is %q", te.Pos, tag[te.Pos], me.Pos, me.Template[me.Pos])
			}
			return
		}
		if (s.Key == nil) == (s.Keys == nil) || len(s.Keys) > MaxKeys || s.Tag != tag || s.Expire < 0 || s.Wait < 0 {
			t.Fatalf("bad Spec %+v", s)
		}
		// What we accept, reflect.StructTag reads the same way.
		st := reflect.StructTag(tag)
		if v, _ := st.Lookup("key"); s.Key != nil && v != s.Key.String() {
			t.Fatalf("key %q, reflect reads %q", s.Key, v)
		}
		if v, _ := st.Lookup("keys"); s.Keys != nil && !strings.Contains(v, s.Keys[len(s.Keys)-1].String()) {
			t.Fatalf("keys %q, reflect reads %q", s.Keys, v)
		}
		for field, d := range map[string]time.Duration{"expire": s.Expire, "wait": s.Wait} {
			if v, ok := st.Lookup(field); ok {
				if pd, _ := time.ParseDuration(v); pd != d {
					t.Fatalf("%s %v, reflect reads %q", field, d, v)
				}
			} else if d != 0 {
				t.Fatalf("%s %v without the field", field, d)
			}
		}
		if v, _ := st.Lookup("name"); v != s.Name {
			t.Fatalf("name %q, reflect reads %q", s.Name, v)
		}
		// A rate is within its bounds, takes no lock, and is there only
		// when the tag has a rate field.
		r := s.Rate
		if _, ok := st.Lookup("rate"); ok != (r.N > 0) || (r == Rate{}) != (r.N == 0) {
			t.Fatalf("rate %+v, field present %v", r, ok)
		}
		if r.N > 0 && (r.N > MaxRate || r.Burst < 1 || r.Burst > MaxRate || r.Period < time.Millisecond || r.Period > MaxRatePeriod ||
			r.Interval() < MinRateInterval || time.Duration(r.Burst) > MaxRatePeriod/r.Interval() ||
			s.Keys != nil || s.Expire != 0 || s.Limit != 0 || s.Keep != 0 || s.Mode != "") {
			t.Fatalf("bad rate spec %+v", s)
		}
	})
}

// FuzzTemplate compiles any template, binds every placeholder to one of two
// fuzzed values and checks that evaluation does not panic and that the name
// decodes back to the values.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"order:{path.id}", "{a}-{b}", "{{x}}:{a}}}", "{a}{{{b}}}", "{a} {b}", "{a}", "x{", "{a.b..c}"} {
		f.Add(s, "v:1", "w-2", uint8(8))
	}
	f.Fuzz(func(t *testing.T, tmpl, v, w string, maxLen uint8) {
		tm, err := Compile(tmpl)
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) || !errors.Is(err, ErrSyntax) || te.Pos < 0 || te.Pos > len(tmpl) {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		phs := tm.Placeholders()
		k, err := Bind(tm, indexSources(phs), WithMaxValueLen(int(maxLen)+1), WithHashLong(maxLen%2 == 0))
		if err != nil {
			t.Fatalf("Bind: %v", err)
		}
		vals := make([]string, len(phs))
		for i := range vals {
			vals[i] = v
			if i%2 == 1 {
				vals[i] = w
			}
		}
		name, err := k.Eval(vals)
		if err != nil {
			if !errors.Is(err, ErrMissingValue) && !errors.Is(err, ErrValueTooLong) {
				t.Fatalf("Eval: %v", err)
			}
			return
		}
		checkDecode(t, tm, name, vals, int(maxLen)+1)
	})
}

// indexSources binds the placeholders of a template, in order, to the
// elements of a []string request.
func indexSources(phs []Placeholder) Sources[[]string] {
	n := 0
	bind := func(string) (Getter[[]string], error) {
		i := n
		n++
		return func(r []string) (string, error) { return r[i], nil }, nil
	}
	src := Sources[[]string]{}
	for _, ph := range phs {
		src[ph.Source] = bind
	}
	return src
}

// checkDecode splits name back into values the way the package documentation
// argues it can be done, and checks it gets vals (hashed for values over
// maxLen). That every name decodes to its own values is injectivity.
func checkDecode(t *testing.T, tm *Template, name string, vals []string, maxLen int) {
	t.Helper()
	rest := name
	for si, s := range tm.segs {
		if s.ph < 0 {
			if !strings.HasPrefix(rest, s.lit) {
				t.Fatalf("name %q: literal %q missing at %q", name, s.lit, rest)
			}
			rest = rest[len(s.lit):]
			continue
		}
		var tok string
		switch {
		case si+1 == len(tm.segs): // last segment: the value runs to the end
			tok, rest = rest, ""
		case s.ph+1 == len(tm.phs): // last placeholder: the trailing literal is known
			trail := tm.segs[si+1].lit
			if len(rest) < len(trail) {
				t.Fatalf("name %q too short", name)
			}
			tok, rest = rest[:len(rest)-len(trail)], rest[len(rest)-len(trail):]
		default: // the value ends at the first byte of the next literal
			end := strings.IndexByte(rest, tm.segs[si+1].lit[0])
			if end < 0 {
				t.Fatalf("name %q: separator %q not found", name, tm.segs[si+1].lit[0])
			}
			tok, rest = rest[:end], rest[end:]
		}
		want := vals[s.ph]
		if len(want) > maxLen {
			sum := sha256.Sum256([]byte(want))
			if tok != hashMarker+hex.EncodeToString(sum[:]) {
				t.Fatalf("name %q: token %q is not the hash of %q", name, tok, want)
			}
			continue
		}
		if got, err := unescape(tok); err != nil || got != want {
			t.Fatalf("name %q: token %q decodes to %q, %v; want %q", name, tok, got, err, want)
		}
	}
	if rest != "" {
		t.Fatalf("name %q: %q left over", name, rest)
	}
}

// unescape reverses appendEscaped; it refuses anything but %XX with upper-case hex.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || strings.ToUpper(s[i+1:i+3]) != s[i+1:i+3] {
			return "", errors.New("bad escape")
		}
		c, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", err
		}
		b.WriteByte(byte(c))
		i += 2
	}
	return b.String(), nil
}

var injectiveTemplates = []string{
	"{a}",
	"x:{a}:{b}",
	"{a}-{b}",
	"{a}.{b}/{c}",
	"order:{a}:item:{b}:end",
	"{a}{{{b}}}",
	"{a} {b}",
	"{a}_{b}_{c}",
	"pre{a}:{b}post",
	"{a}:{a}",
	"{a}-{b}:{c}!",
}

// FuzzInjective checks, for a fixed set of templates, that two different
// tuples of values never give the same name.
func FuzzInjective(f *testing.F) {
	f.Add(uint8(1), "a:b", "c", "", "a", "b:c", "", false)
	f.Add(uint8(2), "a-b", "c", "", "a", "b-c", "", true)
	f.Add(uint8(5), "a{", "b", "", "a", "{b", "", false)
	f.Add(uint8(0), "%sha256", "", "", "0123456789abcdefg", "", "", true)
	f.Fuzz(func(t *testing.T, ti uint8, a1, b1, c1, a2, b2, c2 string, hash bool) {
		tm, err := Compile(injectiveTemplates[int(ti)%len(injectiveTemplates)])
		if err != nil {
			t.Fatal(err)
		}
		phs := tm.Placeholders()
		src := Sources[[3]string]{}
		for _, name := range []string{"a", "b", "c"} {
			idx := int(name[0] - 'a')
			src[name] = func(string) (Getter[[3]string], error) {
				return func(r [3]string) (string, error) { return r[idx], nil }, nil
			}
		}
		const maxLen = 16
		k, err := Bind(tm, src, WithMaxValueLen(maxLen), WithHashLong(hash))
		if err != nil {
			t.Fatal(err)
		}
		r1, r2 := [3]string{a1, b1, c1}, [3]string{a2, b2, c2}
		n1, err1 := k.Eval(r1)
		n2, err2 := k.Eval(r2)
		if err1 != nil || err2 != nil {
			return
		}
		same := true
		for _, ph := range phs {
			i := ph.Source[0] - 'a'
			same = same && r1[i] == r2[i]
		}
		if same != (n1 == n2) {
			t.Fatalf("%s: %q -> %q and %q -> %q", tm, r1, n1, r2, n2)
		}
		vals := make([]string, len(phs))
		for i, ph := range phs {
			vals[i] = r1[ph.Source[0]-'a']
		}
		checkDecode(t, tm, n1, vals, maxLen)
	})
}
