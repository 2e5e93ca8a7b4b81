package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/internal/logtest"
)

// TestBannerListsEveryRoute: the banner's "Try:" list names every route
// the app serves — each Gin route, the net/http route, health, the ops
// page, each Shop method over connect and gRPC — uses no
// platform-specific command (macOS `open`), and every curl command in it
// works against the running app (a 2xx answer).
func TestBannerListsEveryRoute(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out logtest.Buffer
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	cfg := config{HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", Quiet: true,
		Getenv: func(string) string { return "" }, Ready: func(h, g string) { ready <- [2]string{h, g} }}
	go func() { done <- run(ctx, cfg, &out) }()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	defer func() { cancel(); <-done }()
	banner := out.String()
	base := "http://" + addrs[0]

	if regexp.MustCompile(`(?m)^\s*(open|xdg-open|start)\s`).MatchString(banner) {
		t.Errorf("the banner opens a browser with a platform's command:\n%s", banner)
	}
	be, err := openBackend(ctx, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var want []string // regexps of what the banner must name
	for _, r := range newRouter(newShop(be.lk, newStore(0, seedStock)), nil).Routes() {
		want = append(want, regexp.QuoteMeta(base)+regexp.MustCompile(`:[^/]+`).ReplaceAllString(regexp.QuoteMeta(r.Path), `[^/\s']+`)+`[\s']`)
	}
	want = append(want, regexp.QuoteMeta(base)+`/std/items/[^/\s']+/buy\s`, regexp.QuoteMeta(base+"/healthz")+`\s`,
		regexp.QuoteMeta(base+"/debug/locktag/")+`\s`)
	methods := shopv1.File_shop_v1_shop_proto.Services().ByName("Shop").Methods()
	for i := range methods.Len() {
		m := string(methods.Get(i).Name())
		want = append(want, regexp.QuoteMeta(base+"/shop.v1.Shop/"+m)+`\s`, regexp.QuoteMeta(addrs[1]+" shop.v1.Shop/"+m)+`\s`)
	}
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(banner) {
			t.Errorf("the banner lacks a command for %s:\n%s", w, banner)
		}
	}

	cmds := tryCommands(banner)
	if len(cmds) < len(want) {
		t.Fatalf("%d commands under Try:, want at least %d", len(cmds), len(want))
	}
	for _, args := range cmds {
		if args[0] != "curl" {
			continue // grpcurl and go run: their routes are checked above
		}
		req := curlRequest(t, ctx, args)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Errorf("%q: %d %s", strings.Join(args, " "), resp.StatusCode, b)
		}
	}
}

// tryCommands returns the commands under "Try:", each as its words: lines
// continued with a backslash are joined, single quotes group, and a word
// starting with # ends the command.
func tryCommands(banner string) [][]string {
	_, list, _ := strings.Cut(banner, "Try:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	list = strings.ReplaceAll(list, "\\\n", " ")
	var cmds [][]string
	for _, line := range strings.Split(list, "\n") {
		var words []string
		for _, w := range regexp.MustCompile(`'[^']*'|\S+`).FindAllString(line, -1) {
			if strings.HasPrefix(w, "#") {
				break
			}
			words = append(words, strings.Trim(w, "'"))
		}
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
	}
	return cmds
}

// curlRequest turns the curl options the banner uses (-s, -i, -X, -H, -d,
// the URL) into a request.
func curlRequest(t *testing.T, ctx context.Context, args []string) *http.Request {
	t.Helper()
	method, url, body := "", "", ""
	hdr := http.Header{}
	for i := 1; i < len(args); i++ {
		switch a := args[i]; a {
		case "-s", "-i":
		case "-X", "-H", "-d":
			if i++; i == len(args) {
				t.Fatalf("%q: %s without a value", args, a)
			}
			switch a {
			case "-X":
				method = args[i]
			case "-H":
				k, v, _ := strings.Cut(args[i], ":")
				hdr.Add(k, strings.TrimSpace(v))
			case "-d":
				body = args[i]
			}
		default:
			if !strings.HasPrefix(a, "http://") {
				t.Fatalf("%q: unknown curl argument %q", args, a)
			}
			url = a
		}
	}
	switch {
	case method != "":
	case body != "":
		method = http.MethodPost // curl -d
	default:
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	return req
}
