package session

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultAgentsDir returns the agents dir to use when none is given:
// $BRAINSURGEON_AGENTS_DIR, then $AGENTS_DIR, then ~/.openclaw/agents A
// leading "~/" in a variable is expanded to the home directory. When the
// home directory is unknown the last fallback is the relative path
// ".openclaw/agents".
func DefaultAgentsDir() string {
	for _, v := range []string{"BRAINSURGEON_AGENTS_DIR", "AGENTS_DIR"} {
		if d := strings.TrimSpace(os.Getenv(v)); d != "" {
			return expandHome(d)
		}
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(".openclaw", "agents")
	}
	return filepath.Join(home, ".openclaw", "agents")
}

// expandHome replaces a leading "~" or "~/" by the home directory.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}
