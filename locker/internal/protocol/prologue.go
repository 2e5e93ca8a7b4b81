package protocol

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/locktag/locktag/locker/driver"
)

// layoutFor returns the layout of script name: one of Layouts, or the
// start-up check's.
func layoutFor(name string) (Layout, bool) {
	if name == checkLayout.Name {
		return checkLayout, true
	}
	return LayoutOf(name)
}

// ident is the Lua name of a field called name: prefix ("k_" or "a_") and
// name lowercased, every character but a letter or digit turned to '_'.
// A trailing "..." (one argument per lock, or the rest of ARGV) becomes
// "s", as for its Arg constant ("token..." is a_tokens).
func ident(prefix, name string) string {
	if n, ok := strings.CutSuffix(name, "..."); ok {
		name = n + "s"
	}
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range strings.ToLower(name) {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// repeatCount is the name a Repeat layout's prologue gives the number of
// key groups (locks).
const repeatCount = "k_count"

// prologue is the Lua that opens script name: its layout's keys and
// arguments as locals named by ident, so that no fragment reads KEYS or
// ARGV by position. A Repeat layout's keys and per-lock argument are
// accessor functions of the lock's number i (from 1), and k_count is the
// number of locks; an argument named "x..." that ends a layout is the
// table a_xs of the rest of ARGV. It is "" for a layout with neither keys
// nor arguments. It panics on a name without a layout.
func prologue(name string) string {
	src, _ := prologueOf(name)
	return src
}

// declared is the set of names prologue(name) gives.
func declared(name string) map[string]bool {
	_, names := prologueOf(name)
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// prologueOf is prologue(name) and the names it gives, in order. It panics
// on a layout that would give one name twice.
func prologueOf(name string) (string, []string) {
	l, ok := layoutFor(name)
	if !ok {
		panic(fmt.Sprintf("protocol: %s has no layout (Layouts, layout.go)", name))
	}
	if len(l.Keys) == 0 && len(l.Args) == 0 {
		return "", nil
	}
	var b strings.Builder
	var names []string
	give := func(n string) string {
		if slices.Contains(names, n) {
			panic(fmt.Sprintf("protocol: %s's layout gives %s twice (rename a field in Layouts)", name, n))
		}
		names = append(names, n)
		return n
	}
	fmt.Fprintf(&b, "-- %s: its keys and arguments by name (Layouts, layout.go).\n", name)
	if l.Repeat {
		g := len(l.Keys)
		fmt.Fprintf(&b, "local %s = #KEYS / %d\n", give(repeatCount), g)
		for j, f := range l.Keys {
			at := fmt.Sprintf("%d * i - %d", g, g-1-j)
			switch {
			case g == 1:
				at = "i"
			case j == g-1:
				at = fmt.Sprintf("%d * i", g)
			}
			fmt.Fprintf(&b, "local function %s(i) return KEYS[%s] end\n", give(ident("k_", f.Name)), at)
		}
		for j, f := range l.Args {
			switch j {
			case 0:
				fmt.Fprintf(&b, "local %s = ARGV[1]\n", give(ident("a_", f.Name)))
			case 1:
				fmt.Fprintf(&b, "local function %s(i) return ARGV[1 + i] end\n", give(ident("a_", f.Name)))
			default:
				fmt.Fprintf(&b, "local %s = ARGV[%s + %d]\n", give(ident("a_", f.Name)), repeatCount, j)
			}
		}
		return b.String(), names
	}
	list := func(prefix, table string, fs []Field) {
		var ns, values []string
		for i, f := range fs {
			ns = append(ns, give(ident(prefix, f.Name)))
			values = append(values, fmt.Sprintf("%s[%d]", table, i+1))
		}
		if len(ns) > 0 {
			fmt.Fprintf(&b, "local %s = %s\n", strings.Join(ns, ", "), strings.Join(values, ", "))
		}
	}
	list("k_", "KEYS", l.Keys)
	args := l.Args
	var rest *Field
	if n := len(args); n > 0 && strings.HasSuffix(args[n-1].Name, "...") {
		rest, args = &args[n-1], args[:n-1]
	}
	list("a_", "ARGV", args)
	if rest != nil {
		fmt.Fprintf(&b, "local %s = {unpack(ARGV, %d)}\n", give(ident("a_", rest.Name)), len(args)+1)
	}
	return b.String(), names
}

var (
	// nameRef is a use of a name a prologue gives.
	nameRef = regexp.MustCompile(`\b[ka]_[a-z0-9_]+\b`)
	// nameDecl is a local a fragment would declare under such a name.
	nameDecl = regexp.MustCompile(`\blocal[ \t]+(?:function[ \t]+)?(?:[A-Za-z_]\w*[ \t]*,[ \t]*)*([ka]_[a-z0-9_]+)\b`)
	// localFunc is a local function's definition.
	localFunc = regexp.MustCompile(`\blocal[ \t]+function[ \t]+([A-Za-z_]\w*)`)
)

// luaCode is src without its comments ("--" to the end of the line; the
// fragments have no block comments and no "--" in a string).
func luaCode(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}

// fragmentName names fragment src by its file under lua/, for messages.
func fragmentName(i int, src string) string {
	files, _ := luaFiles.ReadDir("lua")
	for _, f := range files {
		if b, _ := luaFiles.ReadFile("lua/" + f.Name()); string(b) == src {
			return f.Name()
		}
	}
	return fmt.Sprintf("fragment %d", i+1)
}

// checkFragments reports how fragments, assembled as script name, do not
// fit its layout: a fragment that uses a k_ or a_ name its prologue does
// not give, or declares such a name itself, or defines a local function
// another fragment of the script defines too (the later would shadow the
// earlier for the code after it). Comments are not read.
func checkFragments(name string, fragments []string) error {
	have := declared(name)
	defined := map[string]int{}
	for i, f := range fragments {
		c := luaCode(f)
		if m := nameDecl.FindStringSubmatch(c); m != nil {
			return fmt.Errorf("protocol: %s: %s declares %s itself: k_ and a_ names are the prologue's, from the layout", name, fragmentName(i, f), m[1])
		}
		for _, id := range nameRef.FindAllString(c, -1) {
			if !have[id] {
				return fmt.Errorf("protocol: %s: %s uses %s, which its layout (Layouts, layout.go) does not give", name, fragmentName(i, f), id)
			}
		}
		for _, m := range localFunc.FindAllStringSubmatch(c, -1) {
			if j, ok := defined[m[1]]; ok && j != i {
				return fmt.Errorf("protocol: %s: local function %s is defined by both %s and %s", name, m[1], fragmentName(j, fragments[j]), fragmentName(i, f))
			}
			defined[m[1]] = i
		}
	}
	return nil
}

// source is script name as Redis runs it: its prologue, then fragments in
// order. It panics with checkFragments' error on fragments that do not fit
// the layout, so that such a script never builds.
func source(name string, fragments ...string) string {
	if err := checkFragments(name, fragments); err != nil {
		panic(err)
	}
	return prologue(name) + strings.Join(fragments, "")
}

// fragmentsOf is each assembled script's fragments, by name, as assemble
// recorded them (for the tests).
var fragmentsOf = map[string][]string{}

// assemble is source(name, fragments...), recorded in fragmentsOf: every
// script the package runs is made by it (or script) at init.
func assemble(name string, fragments ...string) string {
	src := source(name, fragments...)
	fragmentsOf[name] = fragments
	return src
}

// script is assemble's source as a driver.Script.
func script(name string, fragments ...string) *driver.Script {
	return driver.NewScript(assemble(name, fragments...))
}
