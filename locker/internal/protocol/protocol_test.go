package protocol

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestLayoutsCoverRegistry: every script of ByName has one layout, and
// every layout names a script.
func TestLayoutsCoverRegistry(t *testing.T) {
	reg := ByName()
	seen := map[string]bool{}
	for _, l := range Layouts {
		if seen[l.Name] {
			t.Errorf("layout %s defined twice", l.Name)
		}
		seen[l.Name] = true
		if _, ok := reg[l.Name]; !ok {
			t.Errorf("layout %s: no such script", l.Name)
		}
		if len(l.Replies) == 0 {
			t.Errorf("layout %s: no replies", l.Name)
		}
	}
	for name := range reg {
		if !seen[name] {
			t.Errorf("script %s has no layout (add it to Layouts)", name)
		}
	}
}

var (
	keyIndex  = regexp.MustCompile(`KEYS\[(\d+)\]`)
	argIndex  = regexp.MustCompile(`ARGV\[(\d+)\]`)
	computedK = regexp.MustCompile(`KEYS\[[^\d\]]`)
	computedA = regexp.MustCompile(`ARGV\[[^\d\]]`)
)

// maxIndex is the largest literal index re finds in src (0: none).
func maxIndex(re *regexp.Regexp, src string) int {
	m := 0
	for _, s := range re.FindAllStringSubmatch(src, -1) {
		n, _ := strconv.Atoi(s[1])
		m = max(m, n)
	}
	return m
}

// library is the fragments that several scripts share: a helper there may
// name a key or an argument that only some of its scripts pass (guarded,
// as KEYS[4] on Redlock alone).
var library = []string{luaFence, luaValue, luaLast, luaCommon, luaMutex, luaSemCommon, luaSemKind, luaRWKind}

// code is src without its comments (they name KEYS and ARGV too).
func code(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestLayoutsMatchScripts: each script's use of KEYS and ARGV agrees with
// its layout. Its own fragments (all but the shared library) name no key
// or argument past the layout's, and the whole script, library included,
// names every one the layout declares. A script that indexes by a computed
// number (inspect, multi_acquire) is held to the first rule alone.
func TestLayoutsMatchScripts(t *testing.T) {
	reg := ByName()
	for _, l := range Layouts {
		s, ok := reg[l.Name]
		if !ok {
			continue
		}
		all := code(s.Source())
		own := s.Source()
		for _, f := range library {
			own = strings.Replace(own, f, "", 1)
		}
		own = code(own)
		for _, c := range []struct {
			what     string
			re, comp *regexp.Regexp
			n        int
		}{{"KEYS", keyIndex, computedK, len(l.Keys)}, {"ARGV", argIndex, computedA, len(l.Args)}} {
			if o := maxIndex(c.re, own); o > c.n {
				t.Errorf("%s: names %s[%d], its layout has %d", l.Name, c.what, o, c.n)
			}
			if c.comp.MatchString(all) || l.Repeat {
				continue
			}
			if u := maxIndex(c.re, all); u < c.n {
				t.Errorf("%s: its layout has %d %s, the script names at most %d", l.Name, c.n, c.what, u)
			}
		}
	}
}

// protocolDoc is docs/protocol.md, from this package's directory.
var protocolDoc = filepath.Join("..", "..", "..", "docs", "protocol.md")

const (
	genBegin = "<!-- BEGIN GENERATED: script layouts (go generate ./locker/internal/protocol) -->"
	genEnd   = "<!-- END GENERATED -->"
)

// TestProtocolDoc: docs/protocol.md's script tables are Layouts as
// RenderLayouts writes them, and the document names ProtocolVersion.
// go generate ./locker/internal/protocol (or this test with -args
// -update) rewrites them.
func TestProtocolDoc(t *testing.T) {
	b, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, genBegin), strings.Index(doc, genEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no generated section (%q ... %q)", protocolDoc, genBegin, genEnd)
	}
	want := doc[:i] + genBegin + "\n\n" + RenderLayouts() + "\n" + doc[j:]
	if *updateGolden && want != doc {
		if err := os.WriteFile(protocolDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("%s: the script tables differ from Layouts (run go generate ./locker/internal/protocol)", protocolDoc)
	}
	if !strings.Contains(doc, fmt.Sprintf("protocol %d", ProtocolVersion)) {
		t.Errorf("%s does not name protocol %d", protocolDoc, ProtocolVersion)
	}
}

// RenderLayouts writes Layouts, then the start-up check's layout, as
// docs/protocol.md's tables.
func RenderLayouts() string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, l := range append(slices.Clone(Layouts), checkLayout) {
		fmt.Fprintf(&b, "### %s\n\n", l.Name)
		fmt.Fprintf(&b, "| | # | name | meaning |\n|---|---|---|---|\n")
		for i, f := range l.Keys {
			n := fmt.Sprint(i + 1)
			if l.Repeat {
				n = fmt.Sprintf("%d+2i", i+1)
			}
			fmt.Fprintf(&b, "| KEYS | %s | %s | %s%s |\n", n, f.Name, cell(f.Doc), opt(f))
		}
		if len(l.Keys) == 0 {
			fmt.Fprintf(&b, "| KEYS | | (none) | |\n")
		}
		for i, f := range l.Args {
			n := fmt.Sprint(i + 1)
			if l.Repeat && i > 0 {
				n = fmt.Sprintf("%d+i", i+1)
				if i > 1 {
					n = fmt.Sprintf("n+%d", i) // after 1 + n per-lock arguments
				}
			}
			fmt.Fprintf(&b, "| ARGV | %s | %s | %s%s |\n", n, f.Name, cell(f.Doc), opt(f))
		}
		var rs []string
		for _, r := range l.Replies {
			rs = append(rs, cell(r))
		}
		fmt.Fprintf(&b, "\nReplies: %s.\n\n", strings.Join(rs, "; "))
	}
	return b.String()
}

func opt(f Field) string {
	if f.Optional {
		return " (optional)"
	}
	return ""
}

// TestLayoutNames: NameOf finds every registered script.
func TestLayoutNames(t *testing.T) {
	var names []string
	for name, s := range ByName() {
		if NameOf(s) != name {
			t.Errorf("NameOf(%s) = %q", name, NameOf(s))
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if _, ok := LayoutOf(names[0]); !ok {
		t.Errorf("LayoutOf(%s) not found", names[0])
	}
}
