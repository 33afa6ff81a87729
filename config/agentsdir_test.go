package config_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/config"
)

func TestDefaultAgentsDir(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name      string
		brainsurg string
		agentsDir string
		stateDir  string
		want      string
	}{
		{name: "BrainsurgeonWins", brainsurg: "/srv/a", agentsDir: "/srv/b", want: "/srv/a"},
		{name: "AgentsDirFallback", agentsDir: "/srv/b", want: "/srv/b"},
		{name: "HomeFallback", want: filepath.Join(home, ".openclaw", "agents")},
		{name: "TildeExpanded", brainsurg: "~/state/agents", want: filepath.Join(home, "state", "agents")},
		{name: "BlankIgnored", brainsurg: "   ", agentsDir: "/srv/b", want: "/srv/b"},
		{name: "StateDir", stateDir: "/srv/oc", want: "/srv/oc/agents"},
		{name: "StateDirTilde", stateDir: "~/oc", want: filepath.Join(home, "oc", "agents")},
		{name: "AgentsDirBeatsStateDir", agentsDir: "/srv/b", stateDir: "/srv/oc", want: "/srv/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("BRAINSURGEON_AGENTS_DIR", tt.brainsurg)
			t.Setenv("AGENTS_DIR", tt.agentsDir)
			t.Setenv("OPENCLAW_STATE_DIR", tt.stateDir)
			if got := config.DefaultAgentsDir(); got != tt.want {
				t.Fatalf("DefaultAgentsDir() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDefaultAgentsDirFrom checks the errors when the home directory is
// needed and unknown, and the relative fallback of DefaultAgentsDir then.
func TestDefaultAgentsDirFrom(t *testing.T) {
	noHome := func() (string, error) { return "", errors.New("no HOME") }
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{name: "NoVariable", wantErr: true},
		{name: "TildeVariable", env: map[string]string{"AGENTS_DIR": "~/a"}, wantErr: true},
		{name: "TildeStateDir", env: map[string]string{"OPENCLAW_STATE_DIR": "~"}, wantErr: true},
		{name: "AbsoluteNeedsNoHome", env: map[string]string{"AGENTS_DIR": "/srv/a"}, want: "/srv/a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.DefaultAgentsDirFrom(func(k string) string { return tt.env[k] }, noHome)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("DefaultAgentsDirFrom = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
