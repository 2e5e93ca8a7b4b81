package lockfiber

import (
	"errors"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// TestParamValue: Fiber's value of a path parameter, with and without
// UnescapePath, becomes the decoded value.
func TestParamValue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		unescaped bool
		sent      string   // the path as sent
		vals      []string // Fiber's values of the route's parameters
		at        int      // the parameter read
		want      string
		err       error
	}{
		{"as-sent/space", false, "", []string{"a%20b"}, 0, "a b", nil},
		{"as-sent/slash-plus", false, "", []string{"x%2Fy+z"}, 0, "x/y+z", nil},
		{"as-sent/lower-hex", false, "", []string{"%e6%97%a5"}, 0, "日", nil},
		{"as-sent/percent", false, "", []string{"a%2520b"}, 0, "a%20b", nil},
		{"as-sent/plain", false, "", []string{"abc"}, 0, "abc", nil},
		{"as-sent/malformed", false, "", []string{"a%zzb"}, 0, "", httpcore.ErrPathEscape},
		{"as-sent/truncated", false, "", []string{"ab%4"}, 0, "", httpcore.ErrPathEscape},
		{"unescaped/plus", true, "/k/a+b", []string{"a b"}, 0, "a+b", nil},
		{"unescaped/space", true, "/k/a%20b", []string{"a b"}, 0, "a b", nil},
		{"unescaped/encoded-plus", true, "/k/a%2Bb", []string{"a+b"}, 0, "a+b", nil},
		{"unescaped/percent", true, "/k/a%2520b", []string{"a%20b"}, 0, "a%20b", nil},
		{"unescaped/paren-plus", true, "/k/a+b(1)", []string{"a b(1)"}, 0, "a+b(1)", nil},
		{"unescaped/twice-same", true, "/k/a+b/a+b", []string{"a b", "a b"}, 1, "a+b", nil},
		// Two parameters with one decoded text, spelled two ways: the
		// order of the values tells them apart.
		{"unescaped/two/first", true, "/k/a+b/a%20b", []string{"a b", "a b"}, 0, "a+b", nil},
		{"unescaped/two/second", true, "/k/a+b/a%20b", []string{"a b", "a b"}, 1, "a b", nil},
		{"unescaped/two/other-first", true, "/k/c/a%20b", []string{"c", "a b"}, 1, "a b", nil},
		// One parameter whose text the path also spells elsewhere.
		{"unescaped/ambiguous", true, "/k/a+b/x/a%20b", []string{"a b"}, 0, "", httpcore.ErrPathAmbiguous},
		{"unescaped/malformed", true, "/k/a%zzb", []string{"a%zzb"}, 0, "", httpcore.ErrPathEscape},
		{"unescaped/malformed-or-not", true, "/k/a%zzb/a%25zzb", []string{"a%zzb"}, 0, "", httpcore.ErrPathAmbiguous},
		{"unescaped/truncated", true, "/k/ab%4", []string{"ab%4"}, 0, "", httpcore.ErrPathEscape},
		{"unescaped/one-spelling", true, "/k/abc", []string{"abc"}, 0, "abc", nil},
		{"unescaped/no-space", true, "/k/%41+b/%41", []string{"A"}, 0, "A", nil},
		{"unescaped/empty", true, "/k/", []string{""}, 0, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decoded := string(fasthttp.AppendUnquotedArg(nil, []byte(tc.sent))) // Fiber's c.Path() with UnescapePath
			got, err := paramValue(tc.vals, tc.at, tc.unescaped, tc.sent, decoded)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("paramValue = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
	// A path rewritten after decoding (c.Path(override)): Fiber's value.
	if got, err := paramValue([]string{"a b"}, 0, true, "/k/a+b", "/other/a b"); got != "a b" || err != nil {
		t.Fatalf("rewritten path: %q, %v", got, err)
	}
}

// TestArgDecodeIsFasthttps: argDecode decodes as fasthttp does, and its
// offsets point at the bytes each decoded byte came from.
func TestArgDecodeIsFasthttps(t *testing.T) {
	for _, p := range argDecodeSeeds {
		checkArgDecode(t, p)
	}
}

func FuzzArgDecode(f *testing.F) {
	for _, p := range argDecodeSeeds {
		f.Add(p)
	}
	f.Fuzz(checkArgDecode)
}

var argDecodeSeeds = []string{
	"", "/", "/k/a+b", "/k/a%20b", "%", "%4", "a%", "a%4", "%41", "a%41", "%zz", "%4g%41", "%%41",
	"/k/%e6%97%a5%E6%9C%AC", "++%2B+", "/x%2Fy+z(1)", strings.Repeat("%C3%A9", 100),
}

func checkArgDecode(t *testing.T, p string) {
	got, at := argDecode(p)
	if want := string(fasthttp.AppendUnquotedArg(nil, []byte(p))); got != want {
		t.Fatalf("argDecode(%q) = %q, fasthttp %q", p, got, want)
	}
	if len(at) != len(got)+1 || at[len(got)] != len(p) {
		t.Fatalf("argDecode(%q): %d offsets for %d bytes", p, len(at), len(got))
	}
	for i := range got {
		if at[i] >= at[i+1] || (p[at[i]] != '%' && at[i+1]-at[i] != 1) {
			t.Fatalf("argDecode(%q): offsets %v", p, at)
		}
	}
}
