package locktest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/locktag/locktag/keyexpr"
)

// Values are a request's values as a tag's key template reads them, by
// placeholder: "path.id" for {path.id}, "header.X-User" for
// {header.X-User}, "req.sku" for {req.sku}, "method" for {method}.
type Values map[string]string

// sources serves every placeholder of a template from v.
func (v Values) sources(ts []*keyexpr.Template) keyexpr.Sources[Values] {
	src := keyexpr.Sources[Values]{}
	for _, t := range ts {
		for _, ph := range t.Placeholders() {
			src[ph.Source] = func(path string) (keyexpr.Getter[Values], error) {
				name := ph.Source
				if path != "" {
					name += "." + path
				}
				return func(v Values) (string, error) { return v[name], nil }, nil
			}
		}
	}
	return src
}

// Keys returns the lock names a guard with tag takes for a request with
// values: what it passes to locker.Obtain (one name; ObtainMany for a
// `keys` tag), and what Hold, Lose and WaitHeld take. It is the tag's
// key template with each value escaped, as the guard resolves it —
// keyexpr's own evaluation, with the default cap on value lengths
// (keyexpr.DefaultMaxValueLen) — so a test need not know the escaping
// rules. The Locker adds its prefix and hash tag itself. A bad tag or a
// missing value fails the test.
func (k *Kit) Keys(tag string, values Values) []string {
	k.t.Helper()
	names, err := keysOf(tag, values)
	if err != nil {
		k.t.Fatalf("locktest: %v", err)
	}
	return names
}

// Key is Keys for a tag with one key (not `keys`).
func (k *Kit) Key(tag string, values Values) string {
	k.t.Helper()
	names := k.Keys(tag, values)
	if len(names) != 1 {
		k.t.Fatalf("locktest: tag `%s` has %d keys: use Keys", tag, len(names))
	}
	return names[0]
}

func keysOf(tag string, values Values) ([]string, error) {
	spec, err := keyexpr.ParseTag(tag)
	if err != nil {
		return nil, err
	}
	return specKeys(spec, values)
}

func specKeys(spec *keyexpr.Spec, values Values) ([]string, error) {
	ks, err := keyexpr.BindKeys(spec, values.sources(spec.Templates()))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ks))
	for i, key := range ks {
		if names[i], err = key.Eval(values); err != nil {
			return nil, fmt.Errorf("tag `%s`: %w (values: %s)", spec.Tag, err, values)
		}
	}
	return names, nil
}

// String lists v's placeholders, for messages.
func (v Values) String() string {
	return "{" + strings.Join(slices.Sorted(maps.Keys(v)), ", ") + "}"
}
