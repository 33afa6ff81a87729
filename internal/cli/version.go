package cli

import (
	"runtime/debug"
	"strings"
)

// Version says which build is running, for "version" and the API's
// health answer. A version set at link time (-ldflags "-X
// main.version=v1.2.3") wins; "" or "dev" means none was set. Otherwise it
// comes from the build information Go records: the module version when
// the binary was built from a module version ("go install …@v1.2.3"),
// else the VCS revision it was built from (12 hex digits, "+dirty" when
// the work tree had uncommitted changes) and that commit's time, else
// "devel" (a build outside a repository, or a test binary). The Go
// version follows.
func Version(linked string) string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(linked, info, ok)
}

// versionOf is Version over given build information.
func versionOf(linked string, info *debug.BuildInfo, ok bool) string {
	var parts []string
	var rev, at string
	if ok {
		dirty := false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && dirty {
			rev += "+dirty"
		}
	}
	switch {
	case linked != "" && linked != "dev":
		parts = append(parts, linked)
	case ok && info.Main.Version != "" && info.Main.Version != "(devel)" &&
		(rev == "" || !strings.Contains(info.Main.Version, strings.TrimSuffix(rev, "+dirty"))):
		// A pseudo-version stamped from the revision says no more than
		// the revision does.
		parts = append(parts, info.Main.Version)
	}
	if rev != "" {
		r := "revision " + rev
		if at != "" {
			r += " (committed " + at + ")"
		}
		parts = append(parts, r)
	}
	if len(parts) == 0 {
		parts = append(parts, "devel")
	}
	if ok && info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	return strings.Join(parts, ", ")
}
