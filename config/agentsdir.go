package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// DefaultAgentsDir returns the agents dir to use when none is given:
// $BRAINSURGEON_AGENTS_DIR, then $AGENTS_DIR, then $OPENCLAW_STATE_DIR/agents,
// then ~/.openclaw/agents. A leading "~/" in a variable is expanded to the
// home directory. When the home directory is unknown the last fallback is
// the relative path ".openclaw/agents". The OpenClaw root (where
// .brainsurgeon/ lives: the API key, the runtime config, the plugin) is
// always the parent of the agents dir.
func DefaultAgentsDir() string {
	d, err := DefaultAgentsDirFrom(os.Getenv, os.UserHomeDir)
	if err != nil {
		return filepath.Join(".openclaw", "agents")
	}
	return d
}

// DefaultAgentsDirFrom is DefaultAgentsDir reading the environment through
// getenv and the home directory through homeDir. The error says the home
// directory was needed (no variable is set, or one starts with "~") and is
// unknown.
func DefaultAgentsDirFrom(getenv func(string) string, homeDir func() (string, error)) (string, error) {
	expand := func(p string) (string, error) { return expandHome(p, homeDir) }
	for _, v := range []string{"BRAINSURGEON_AGENTS_DIR", "AGENTS_DIR"} {
		if d := strings.TrimSpace(getenv(v)); d != "" {
			return expand(d)
		}
	}
	if s := strings.TrimSpace(getenv("OPENCLAW_STATE_DIR")); s != "" {
		d, err := expand(s)
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "agents"), nil
	}
	home, err := homeDir()
	if err != nil || home == "" {
		return "", errors.Join(errors.New("no home directory for ~/.openclaw/agents and no BRAINSURGEON_AGENTS_DIR, AGENTS_DIR or OPENCLAW_STATE_DIR"), err)
	}
	return filepath.Join(home, ".openclaw", "agents"), nil
}

// expandHome returns p with a leading "~" or "~/" replaced by the home
// directory homeDir gives; the error says the home directory was needed
// and is unknown.
func expandHome(p string, homeDir func() (string, error)) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := homeDir()
	if err != nil || home == "" {
		return "", errors.Join(errors.New("no home directory to expand "+p), err)
	}
	return filepath.Join(home, p[1:]), nil
}
