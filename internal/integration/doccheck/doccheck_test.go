package doccheck

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// root is the repository's top directory, from this package's.
const root = "../../.."

var (
	fence    = regexp.MustCompile("(?s)```.*?```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	link     = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	htmlID   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// pages lists the markdown files the checks cover.
func pages(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	return append(files, docs...)
}

// slug is GitHub's anchor for a heading: lower case, spaces to hyphens,
// punctuation other than hyphens and underscores dropped.
func slug(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a markdown file: its headings' slugs
// (repeated headings get -1, -2, ... as on GitHub) and explicit <a id>s.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := fence.ReplaceAllString(string(b), "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range htmlID.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// TestRelativeLinks: every relative link in the covered pages names a file
// or folder that exists, and an anchor in a markdown file names one of its
// headings.
func TestRelativeLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := codeSpan.ReplaceAllString(fence.ReplaceAllString(string(b), ""), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %s does not exist", rel(page), target, rel(path))
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			if cache[path] == nil {
				cache[path] = anchors(t, path)
			}
			if !cache[path][anchor] {
				t.Errorf("%s: link %q: no heading #%s in %s", rel(page), target, anchor, rel(path))
			}
		}
	}
}

// TestProblemTypes: every problem type URL the HTTP adapters write (all
// of them through the same copy of internal/httpcore, which copies.sh
// keeps identical), for every outcome, names a section of the docs that
// exists, on a page written for every HTTP adapter: problems.md for a
// lock's, idempotency.md for an idempotency guard's.
func TestProblemTypes(t *testing.T) {
	gin.SetMode(gin.TestMode)
	const base = "https://github.com/locktag/locktag/blob/main/"
	checked := 0
	for k := guard.Kind(0); k.String() != "unknown"; k++ {
		for _, idem := range []bool{false, true} {
			o := guard.Outcome{Kind: k, Idempotency: idem, Record: &guard.Record{Status: 200}}
			rec := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(rec)
			middleware.WriteProblem(c, o, middleware.Status(k))
			var p struct{ Type string }
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("%v: problem body %q: %v", k, rec.Body, err)
			}
			if p.Type == "about:blank" {
				continue
			}
			file, anchor, ok := strings.Cut(strings.TrimPrefix(p.Type, base), "#")
			if !strings.HasPrefix(p.Type, base) || !ok {
				t.Errorf("%v (idempotency %t): problem type %q is not a docs anchor under %s", k, idem, p.Type, base)
				continue
			}
			if !anchors(t, filepath.Join(root, file))[anchor] {
				t.Errorf("%v (idempotency %t): problem type %q: no heading #%s in %s", k, idem, p.Type, anchor, file)
			}
			if want := map[bool]string{false: "docs/problems.md", true: "docs/idempotency.md"}[idem]; file != want {
				t.Errorf("%v (idempotency %t): problem type %q is not on %s, the page for every HTTP adapter", k, idem, p.Type, want)
			}
			checked++
		}
	}
	if checked < 2*9 {
		t.Fatalf("%d problem types checked; the lock and idempotency guards have more", checked)
	}
}

func rel(p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}
