package lockotel

import "runtime/debug"

// fallbackVersion is the instrumentation scope version when the build
// carries no module version for locktag's core module (a build inside
// this repository, a replace directive, or a binary built without module
// support).
const fallbackVersion = "v0.0.0-devel"

// moduleVersion is the version of locktag's core module
// (github.com/locktag/locktag, the scope's name) the binary was built
// with: the instrumentation scope version of every span and metric.
var moduleVersion = versionOf(debug.ReadBuildInfo())

// versionOf finds the core module's version in a binary's build information.
func versionOf(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return fallbackVersion
	}
	const path = "github.com/locktag/locktag"
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m == nil || m.Path != path {
			continue
		}
		if r := m.Replace; r != nil && r.Version == "(devel)" {
			// Replaced by a directory: the code is whatever is there, not
			// the required version (which go records as well).
			return fallbackVersion
		} else if r != nil && r.Version != "" {
			return r.Version
		}
		if m.Version != "" && m.Version != "(devel)" {
			return m.Version
		}
	}
	return fallbackVersion
}
