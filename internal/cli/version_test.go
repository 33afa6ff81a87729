package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "9d7fe94c1a2b3c4d5e6f708192a3b4c5d6e7f809"},
		{Key: "vcs.time", Value: "2026-11-25T20:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	for _, tt := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		ok     bool
		want   string
	}{
		{"NoBuildInfo", "dev", nil, false, "devel"},
		{"LinkedNoBuildInfo", "v1.2.3", nil, false, "v1.2.3"},
		{"TestBinary", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true, "devel, go1.26.8"},
		{"ModuleVersion", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}}, true, "v0.4.0, go1.26.8"},
		{"Revision", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs}, true,
			"revision 9d7fe94c1a2b+dirty (committed 2026-11-25T20:00:00Z), go1.26.8"},
		{"CleanRevision", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs[:3]}, true,
			"revision 9d7fe94c1a2b (committed 2026-11-25T20:00:00Z), go1.26.8"},
		{"PseudoVersion", "dev", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261125200000-9d7fe94c1a2b+dirty"}, Settings: vcs}, true,
			"revision 9d7fe94c1a2b+dirty (committed 2026-11-25T20:00:00Z), go1.26.8"},
		{"LinkedWins", "v2.0.0", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}, Settings: vcs[:2]}, true,
			"v2.0.0, revision 9d7fe94c1a2b, go1.26.8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionOf(tt.linked, tt.info, tt.ok); got != tt.want {
				t.Errorf("versionOf = %q, want %q", got, tt.want)
			}
		})
	}
}
