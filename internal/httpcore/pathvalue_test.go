package httpcore

import (
	"errors"
	"net/url"
	"testing"
)

// TestPathParam feeds PathParam what each router hands over for a request
// under each of its settings (as read from the routers' sources: Gin
// v1.11, Echo v5.4, ServeMux, chi v5.5) and checks that the value is the
// decoded one.
func TestPathParam(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Syntax
		sent    string // the request path as sent
		pattern string
		vals    map[string]string // what the router hands over
		param   string
		want    string
		err     error
	}{
		// Gin: without UseRawPath it matches URL.Path (decoded).
		{"gin/default/paren-plus", GinSyntax, "/k/a(1)+b", "/k/:id", map[string]string{"id": "a(1)+b"}, "id", "a(1)+b", nil},
		{"gin/default/percent", GinSyntax, "/k/50%25(", "/k/:id", map[string]string{"id": "50%("}, "id", "50%(", nil},
		{"gin/default/space-and-plus", GinSyntax, "/k/a%20b/a+b!", "/k/:x/:y", map[string]string{"x": "a b", "y": "a+b!"}, "x", "a b", nil},
		{"gin/default/space-and-plus/y", GinSyntax, "/k/a%20b/a+b!", "/k/:x/:y", map[string]string{"x": "a b", "y": "a+b!"}, "y", "a+b!", nil},
		// A path spelled so that its raw segments look like other values:
		// Gin matched URL.Path (/x/%41/A), and b is "%41".
		{"gin/default/misleading", GinSyntax, "/x%2F%2541/%41", "/:a/:b/:c", map[string]string{"a": "x", "b": "%41", "c": "A"}, "b", "%41", nil},
		// UseRawPath with UnescapePathValues: RawPath, then
		// url.QueryUnescape (a plus into a space).
		{"gin/raw/paren-plus", GinSyntax, "/k/a(1)+b", "/k/:id", map[string]string{"id": "a(1) b"}, "id", "a(1)+b", nil},
		{"gin/raw/slash-plus", GinSyntax, "/k/x%2Fy+z", "/k/:id", map[string]string{"id": "x/y z"}, "id", "x/y+z", nil},
		{"gin/raw/two", GinSyntax, "/o/x+y/p%2Fq", "/o/:a/:b", map[string]string{"a": "x y", "b": "p/q"}, "a", "x+y", nil},
		{"gin/raw/catch-all", GinSyntax, "/f/a%2Fb/c+d", "/f/*path", map[string]string{"path": "/a/b/c d"}, "path", "/a/b/c+d", nil},
		{"gin/raw/remove-extra-slash", GinSyntax, "/k//a+b(1)", "/k/:id", map[string]string{"id": "a b(1)"}, "id", "a+b(1)", nil},
		// UseRawPath without UnescapePathValues: as sent.
		{"gin/raw-as-sent/slash-plus", GinSyntax, "/k/x%2Fy+z", "/k/:id", map[string]string{"id": "x%2Fy+z"}, "id", "x/y+z", nil},
		{"gin/raw-as-sent/percent", GinSyntax, "/k/50%25(", "/k/:id", map[string]string{"id": "50%25("}, "id", "50%(", nil},
		// Echo v5: the default router hands RawPath's values over as sent.
		{"echo/default/slash-plus", EchoSyntax, "/k/x%2Fy+z", "/k/:id", map[string]string{"id": "x%2Fy+z"}, "id", "x/y+z", nil},
		{"echo/default/percent", EchoSyntax, "/k/50%25(", "/k/:id", map[string]string{"id": "50%25("}, "id", "50%(", nil},
		{"echo/default/any", EchoSyntax, "/f/a%2Fb", "/f/*", map[string]string{"*": "a%2Fb"}, "*", "a/b", nil},
		{"echo/default/inline-verb", EchoSyntax, "/k/a%2Fb:cancel", `/k/:id\:cancel`, map[string]string{"id": "a%2Fb"}, "id", "a/b", nil},
		{"echo/default/not-last", EchoSyntax, "/k/a%2Fb/x", "/k/:id/x", map[string]string{"id": "a%2Fb"}, "id", "a/b", nil},
		// UnescapePathParamValues: url.PathUnescape.
		{"echo/unescape/slash-plus", EchoSyntax, "/k/x%2Fy+z", "/k/:id", map[string]string{"id": "x/y+z"}, "id", "x/y+z", nil},
		{"echo/unescape/percent", EchoSyntax, "/k/50%25(", "/k/:id", map[string]string{"id": "50%("}, "id", "50%(", nil},
		// UseEscapedPathForMatching: URL.Path, a last parameter to the end.
		{"echo/decoded/slash-plus", EchoSyntax, "/k/x%2Fy+z", "/k/:id", map[string]string{"id": "x/y+z"}, "id", "x/y+z", nil},
		// ServeMux: decoded values, segments matched as sent.
		{"servemux/slash-plus", BraceSyntax, "/k/x%2Fy+z", "GET /k/{id}", map[string]string{"id": "x/y+z"}, "id", "x/y+z", nil},
		{"servemux/host", BraceSyntax, "/k/x%2Fy", "example.com/k/{id}", map[string]string{"id": "x/y"}, "id", "x/y", nil},
		{"servemux/rest", BraceSyntax, "/f/a%2Fb/c+d", "/f/{p...}", map[string]string{"p": "a/b/c+d"}, "p", "a/b/c+d", nil},
		{"servemux/percent", BraceSyntax, "/k/a%2520b", "/k/{id}", map[string]string{"id": "a%20b"}, "id", "a%20b", nil},
		// chi: RawPath's values as sent.
		{"chi/slash-plus", BraceSyntax, "/k/x%2Fy+z", "/k/{id}", map[string]string{"id": "x%2Fy+z"}, "id", "x/y+z", nil},
		{"chi/regexp", BraceSyntax, "/k/x%2F1", "/k/{id:[a-z]%2F[0-9]{1}}", map[string]string{"id": "x%2F1"}, "id", "x/1", nil},
		{"chi/two-in-a-segment", BraceSyntax, "/r/x%2By-z(", "/r/{a}-{b}", map[string]string{"a": "x%2By", "b": "z("}, "a", "x+y", nil},
		{"chi/catch-all", BraceSyntax, "/f/a%2Fb", "/f/*", map[string]string{"*": "a%2Fb"}, "*", "a/b", nil},
		// gorilla/mux with UseEncodedPath: as sent even without RawPath.
		{"gorilla/encoded/space", BraceSyntax, "/k/a%20b", "/k/{id}", map[string]string{"id": "a%20b"}, "id", "a b", nil},
		// One spelling: at once.
		{"one-spelling", GinSyntax, "/k/abc", "/k/:id", map[string]string{"id": "abc"}, "id", "abc", nil},
		// No pattern, or one that does not fit: the router's value.
		{"no-pattern", BraceSyntax, "/k/x%2Fy", "", map[string]string{"id": "x%2Fy"}, "id", "x%2Fy", nil},
		{"pattern-misfit", BraceSyntax, "/k/x%2Fy", "/other/{id}", map[string]string{"id": "x%2Fy"}, "id", "x%2Fy", nil},
		{"empty", BraceSyntax, "/k/", "/k/{id}", map[string]string{"id": ""}, "id", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(tc.sent)
			if err != nil {
				t.Fatal(err)
			}
			got, err := PathParam(tc.s, u, tc.pattern, tc.param, tc.vals[tc.param], func(n string) string { return tc.vals[n] })
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("PathParam = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestReadings: readings that disagree, or a malformed escape beside a
// reading, are ambiguous; a malformed escape alone is ErrPathEscape; no
// reading is the fallback.
func TestReadings(t *testing.T) {
	bad := ErrPathEscape
	for _, tc := range []struct {
		name string
		add  []error // nil: the value "v" plus the index
		want string
		err  error
	}{
		{"none", nil, "fallback", nil},
		{"one", []error{nil}, "v0", nil},
		{"agree", []error{nil, nil}, "v0", nil},
		{"escape", []error{bad}, "", ErrPathEscape},
		{"escape-and-value", []error{nil, bad}, "", ErrPathAmbiguous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r readings
			for _, err := range tc.add {
				r.add("v0", err)
			}
			got, err := r.result("fallback")
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("result = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
	var r readings
	r.add("a", nil)
	r.add("b", nil)
	if _, err := r.result(""); !errors.Is(err, ErrPathAmbiguous) {
		t.Fatalf("two readings: %v, want ErrPathAmbiguous", err)
	}
}

func TestUnescapePath(t *testing.T) {
	for raw, want := range map[string]string{
		"a%20b":              "a b",
		"x%2Fy+z":            "x/y+z",
		"%e6%97%a5":          "日",
		"%E6%97%A5":          "日",
		"a%2520b":            "a%20b",
		"plain":              "plain",
		"%C3%A9%C3%A9%C3%A9": "ééé",
	} {
		if got, err := UnescapePath(raw); err != nil || got != want {
			t.Errorf("UnescapePath(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"a%zzb", "ab%4", "%", "a%2"} {
		if _, err := UnescapePath(raw); !errors.Is(err, ErrPathEscape) {
			t.Errorf("UnescapePath(%q): %v, want ErrPathEscape", raw, err)
		}
	}
}

// FuzzPathParam: any pattern and path, with the router's values read from
// the pattern's own match of the path as sent (a router that hands values
// over as sent): PathParam does not panic, and a value it returns without
// error for such a router is the decoded segment.
func FuzzPathParam(f *testing.F) {
	f.Add(uint8(1), "/k/:id", "/k/x%2Fy+z")
	f.Add(uint8(2), `/k/:id\:verb`, "/k/a%20b:verb")
	f.Add(uint8(3), "GET /f/{p...}", "/f/a%2Fb")
	f.Add(uint8(3), "/r/{a}-{b:[0-9]{2}}", "/r/x%2By-12")
	f.Add(uint8(1), "/f/*path", "/f/a+b/c")
	f.Fuzz(func(t *testing.T, s uint8, pattern, sent string) {
		syn := Syntax(s%3 + 1)
		u, err := url.Parse(sent)
		if err != nil || u.Path == "" || u.Path[0] != '/' {
			return
		}
		raw := u.EscapedPath()
		parts := syn.parse(pattern)
		m, ok := match(parts, raw, syn == BraceSyntax)
		if !ok {
			return
		}
		vals := map[string]string{}
		var names []string
		for _, pt := range parts {
			if pt.param {
				if _, dup := vals[pt.name]; !dup {
					names = append(names, pt.name)
					vals[pt.name] = m[len(vals)]
				}
			}
		}
		if len(names) != len(m) {
			return // a name used twice: not a route any router accepts
		}
		for i, n := range names {
			got, err := PathParam(syn, u, pattern, n, vals[n], func(n string) string { return vals[n] })
			if err != nil || vals[n] == "" {
				continue
			}
			if want, _ := url.PathUnescape(m[i]); got != want {
				t.Fatalf("%v %q on %q: %s = %q, want %q", syn, pattern, raw, n, got, want)
			}
		}
	})
}
