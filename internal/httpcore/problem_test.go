package httpcore

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locktag/locktag/locker/guard"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// docsBase is where every problem type URI points: a file of the
// repository's main branch and a heading's anchor in it.
const docsBase = "https://github.com/locktag/locktag/blob/main/"

// TestProblemTypesDocumented: every problem type any HTTP adapter sends,
// for every outcome of a lock or an idempotency guard, links to a heading
// that exists in the docs, in a page that serves every HTTP adapter. The
// control: a made-up anchor is not found.
func TestProblemTypesDocumented(t *testing.T) {
	anchors := map[string]map[string]bool{} // file -> anchors
	found := func(uri string) (string, bool) {
		file, anchor, ok := strings.Cut(strings.TrimPrefix(uri, docsBase), "#")
		if !strings.HasPrefix(uri, docsBase) || !ok || anchor == "" {
			return file, false
		}
		if anchors[file] == nil {
			b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(file)))
			if err != nil {
				t.Fatalf("%s: %v", uri, err)
			}
			anchors[file] = headingAnchors(string(b))
		}
		return file, anchors[file][anchor]
	}
	seen := 0
	for k := guard.Kind(0); k.String() != "unknown"; k++ {
		for _, idem := range []bool{false, true} {
			o := guard.Outcome{Kind: k, Idempotency: idem, Record: &guard.Record{Status: 200}}
			var p problem
			if err := json.Unmarshal(Problem(o, Status(k)), &p); err != nil {
				t.Fatal(err)
			}
			if p.Type == "about:blank" {
				continue
			}
			seen++
			file, ok := found(p.Type)
			if !ok {
				t.Errorf("%v (idempotency %v): type %s: no such heading", k, idem, p.Type)
			}
			if file != "docs/problems.md" && file != "docs/idempotency.md" {
				t.Errorf("%v: type %s is not in a page for every HTTP adapter", k, p.Type)
			}
		}
	}
	if seen < 18 {
		t.Errorf("%d problem types checked; the lock and idempotency guards have more", seen)
	}
	if _, ok := found(docsBase + "docs/problems.md#lock-gone"); ok {
		t.Error("control: a made-up anchor was found")
	}
}

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: lower case, spaces to hyphens, punctuation other than hyphens
// and underscores dropped. Code blocks are skipped.
func headingAnchors(md string) map[string]bool {
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	out := map[string]bool{}
	fence := false
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		h = drop.ReplaceAllString(strings.ToLower(h), "")
		out[strings.ReplaceAll(h, " ", "-")] = true
	}
	return out
}
