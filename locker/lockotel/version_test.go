package lockotel

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	const path = "github.com/locktag/locktag"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, fallbackVersion},
		{"a dependency", &debug.BuildInfo{Main: debug.Module{Path: "example.com/svc", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "other", Version: "v9"}, {Path: path, Version: "v1.4.2"}}}, true, "v1.4.2"},
		{"replaced", &debug.BuildInfo{Deps: []*debug.Module{{Path: path, Version: "v1.4.2",
			Replace: &debug.Module{Path: "../locktag"}}}}, true, "v1.4.2"},
		{"replaced by a version", &debug.BuildInfo{Deps: []*debug.Module{{Path: path, Version: "v1.4.2",
			Replace: &debug.Module{Path: "fork", Version: "v1.4.3"}}}}, true, "v1.4.3"},
		// What go build records for `replace github.com/locktag/locktag => ../locktag`.
		{"replaced by a directory", &debug.BuildInfo{Deps: []*debug.Module{{Path: path, Version: "v0.0.0",
			Replace: &debug.Module{Path: "../locktag", Version: "(devel)"}}}}, true, fallbackVersion},
		{"built in this repository", &debug.BuildInfo{Main: debug.Module{Path: path, Version: "(devel)"}}, true, fallbackVersion},
		{"not a dependency", &debug.BuildInfo{Main: debug.Module{Path: "x", Version: "v2"}}, true, fallbackVersion},
	} {
		if got := versionOf(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
