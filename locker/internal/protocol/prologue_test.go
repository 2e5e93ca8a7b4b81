package protocol

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
)

// TestScriptsAssembled: every script of the registry, and the start-up
// check, is its layout's prologue followed by its fragments (after
// replica_facts's flags line), and its fragments pass checkFragments:
// they use only the names the prologue gives and define each local
// function once.
func TestScriptsAssembled(t *testing.T) {
	srcs := map[string]string{checkLayout.Name: CheckSource}
	for name, s := range ByName() {
		srcs[name] = s.Source()
	}
	if got, want := slices.Sorted(maps.Keys(fragmentsOf)), slices.Sorted(maps.Keys(srcs)); !slices.Equal(got, want) {
		t.Errorf("assembled %q, want the registry and the check %q", got, want)
	}
	for name, src := range srcs {
		fs, ok := fragmentsOf[name]
		if !ok {
			continue
		}
		if err := checkFragments(name, fs); err != nil {
			t.Error(err)
		}
		body := prologue(name) + strings.Join(fs, "")
		prefix, ok := strings.CutSuffix(src, body)
		if !ok || (prefix != "" && !strings.HasPrefix(prefix, "#!lua ")) {
			t.Errorf("%s is not its prologue and fragments (prefix %q)", name, prefix)
		}
	}
}

// TestPrologueText: a prologue names each key and argument after its
// layout's field, in the layout's order; a repeated layout's per-lock
// fields are accessors; the rest of ARGV is a table; a script without
// keys or arguments has none.
func TestPrologueText(t *testing.T) {
	for name, want := range map[string]string{
		"mutex_acquire": "-- mutex_acquire: its keys and arguments by name (Layouts, layout.go).\n" +
			"local k_lock, k_queue, k_unused, k_last = KEYS[1], KEYS[2], KEYS[3], KEYS[4]\n" +
			"local a_token, a_ttl_ms, a_wait_ms, a_mode, a_sid, a_window_ms, a_label = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]\n",
		"multi_acquire": "-- multi_acquire: its keys and arguments by name (Layouts, layout.go).\n" +
			"local k_count = #KEYS / 2\n" +
			"local function k_lock(i) return KEYS[2 * i - 1] end\n" +
			"local function k_queue(i) return KEYS[2 * i] end\n" +
			"local a_ttl_ms = ARGV[1]\n" +
			"local function a_tokens(i) return ARGV[1 + i] end\n" +
			"local a_label = ARGV[k_count + 2]\n",
		"check": "-- check: its keys and arguments by name (Layouts, layout.go).\n" +
			"local a_key, a_channel, a_payload = ARGV[1], ARGV[2], ARGV[3]\n" +
			"local a_commands = {unpack(ARGV, 4)}\n",
		"ping":          "",
		"replica_facts": "",
	} {
		if got := prologue(name); got != want {
			t.Errorf("prologue(%s):\n%s\nwant:\n%s", name, got, want)
		}
	}
	if got := ident("k_", "rw holders"); got != "k_rw_holders" {
		t.Errorf("ident(rw holders) = %s", got)
	}
}

// TestCheckFragmentsRefuses: checkFragments refuses a fragment that uses
// a name the layout does not give, declares a k_ or a_ name itself, or
// defines a local function another fragment defines; comments are not
// read. source panics with the error, naming the script and the name.
func TestCheckFragmentsRefuses(t *testing.T) {
	for _, c := range []struct {
		name, why string
		fragments []string
	}{
		{"mutex_pttl", "k_queue", []string{"return redis.call('EXISTS', k_queue)\n"}},
		{"mutex_pttl", "a_ttl_ms", []string{"local v = tonumber(a_ttl_ms)\n"}},
		{"sem_extend", "k_lock", []string{"return k_lock\n"}},
		{"mutex_pttl", "a_token", []string{"local x, a_token = 1, 2\n"}},
		{"mutex_pttl", "k_lock", []string{"local function k_lock() end\n"}},
		{"mutex_pttl", "hand_on", []string{"local function hand_on() end\n", "local function hand_on(x) end\n"}},
		{"sem_release", "hand_on", []string{luaSemKind, luaRWKind}},
	} {
		err := checkFragments(c.name, c.fragments)
		if err == nil || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s, %q: %v, want an error naming %s", c.name, c.fragments, err, c.why)
		}
	}
	for _, ok := range []struct {
		name      string
		fragments []string
	}{
		{"mutex_pttl", []string{"-- k_queue, a_ttl_ms: comments only\nreturn redis.call('GET', k_lock) == a_token\n"}},
		{"mutex_pttl", []string{"local function f() end\nlocal function f() end\n"}}, // one fragment's own business
		{"ping", []string{"return 1"}},
	} {
		if err := checkFragments(ok.name, ok.fragments); err != nil {
			t.Errorf("%s, %q: %v", ok.name, ok.fragments, err)
		}
	}
	defer func() {
		msg := panicMessage(recover())
		if !strings.Contains(msg, "mutex_extend") || !strings.Contains(msg, "k_plain") || !strings.Contains(msg, "bridge.lua") {
			t.Errorf("source panicked with %q, want the script, the fragment and the name", msg)
		}
	}()
	source("mutex_extend", luaFence, luaValue, luaBridge)
	t.Error("source did not panic")
}

// panicMessage is a recovered panic's message.
func panicMessage(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	s, _ := v.(string)
	return s
}

// TestFragmentsNameNoPosition: no fragment reads KEYS or ARGV by
// position, even in a comment: the prologue, made from the layout, does.
func TestFragmentsNameNoPosition(t *testing.T) {
	files, err := luaFiles.ReadDir("lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, _ := luaFiles.ReadFile("lua/" + f.Name())
		for _, p := range []string{"KEYS[", "ARGV["} {
			if strings.Contains(string(src), p) {
				t.Errorf("lua/%s reads %s...]: name the key or argument (the prologue's k_ and a_ locals)", f.Name(), p)
			}
		}
	}
}

// TestScriptsCompile: Redis compiles every script and the start-up check
// (SCRIPT LOAD): Lua's limits (200 locals a function, 60 upvalues a
// closure) hold with the prologue's locals.
func TestScriptsCompile(t *testing.T) {
	srv := redistest.Start(t)
	srcs := map[string]string{checkLayout.Name: CheckSource}
	for name, s := range ByName() {
		srcs[name] = s.Source()
	}
	for name, src := range srcs {
		if _, err := redis.String(srv.Do("SCRIPT", "LOAD", src)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
