package keyexpr_test

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/locktag/locktag/keyexpr"
)

func ExampleParseTag() {
	spec, err := keyexpr.ParseTag(`key:"order:{path.id}" expire:"30s" wait:"2s"`)
	if err != nil {
		panic(err)
	}
	fmt.Println(spec.Key, spec.Expire, spec.Wait, spec.HashLong)
	for _, ph := range spec.Key.Placeholders() {
		fmt.Printf("%s: source %q, path %q at byte %d\n", ph, ph.Source, ph.Path, ph.Pos)
	}

	_, err = keyexpr.ParseTag(`key:"order:{path.id}" expiry:"30s"`)
	fmt.Println(errors.Is(err, keyexpr.ErrUnknownField))
	fmt.Println(err)
	// Output:
	// order:{path.id} 30s 2s false
	// {path.id}: source "path", path "id" at byte 6
	// true
	// keyexpr: tag `key:"order:{path.id}" expiry:"30s"`: field expiry at byte 22: unknown field "expiry" (known: key, keys, expire, wait, name, long, limit, keep, mode, rate, burst)
}

// request stands in for a transport's request type (*gin.Context, a gRPC
// request message, ...).
type request struct {
	params map[string]string
	header http.Header
}

func ExampleBind() {
	// A transport adapter provides the sources once ...
	sources := keyexpr.Sources[*request]{
		"path": func(name string) (keyexpr.Getter[*request], error) {
			return func(r *request) (string, error) { return r.params[name], nil }, nil
		},
		"header": func(name string) (keyexpr.Getter[*request], error) {
			name = http.CanonicalHeaderKey(name)
			return func(r *request) (string, error) { return r.header.Get(name), nil }, nil
		},
	}
	// ... and binds each route's template at registration time.
	spec := keyexpr.MustParseTag(`key:"user:{header.X-User-Id}:order:{path.id}"`)
	key, err := keyexpr.Bind(spec.Key, sources, keyexpr.WithHashLong(spec.HashLong))
	if err != nil {
		panic(err)
	}

	for _, r := range []*request{
		{params: map[string]string{"id": "42"}, header: http.Header{"X-User-Id": {"u7"}}},
		{params: map[string]string{"id": "4:2"}, header: http.Header{"X-User-Id": {"u 7"}}},
		{params: map[string]string{"id": "42"}, header: http.Header{}},
	} {
		name, err := key.Eval(r)
		if errors.Is(err, keyexpr.ErrMissingValue) {
			fmt.Println("400:", err)
			continue
		}
		fmt.Println(name)
	}

	_, err = keyexpr.Bind(keyexpr.MustParseTag(`key:"sku:{req.sku}"`).Key, sources)
	fmt.Println(err)
	// Output:
	// user:u7:order:42
	// user:u%207:order:4%3A2
	// 400: keyexpr: template "user:{header.X-User-Id}:order:{path.id}": placeholder {header.X-User-Id} at byte 5: missing value
	// keyexpr: template "sku:{req.sku}": placeholder {req.sku} at byte 4: unknown source "req" (known sources: header, path)
}

func ExampleEscape() {
	// A job that locks an order by hand takes the same lock as a route
	// tagged key:"order:{path.id}".
	id := "A:17"
	fmt.Println("order:" + keyexpr.Escape(id))
	// Output: order:A%3A17
}

// A rate tag limits how often its key is used: here 100 requests a minute
// per user in the long run, and at most 20 at once.
func ExampleParseTag_rate() {
	s := keyexpr.MustParseTag(`key:"api:{header.X-User}" rate:"100/1m" burst:"20"`)
	fmt.Println(s.Rate.N, s.Rate.Period, s.Rate.Burst, s.Rate.Interval())
	// Output: 100 1m0s 20 600ms
}
