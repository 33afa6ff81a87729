package session

import (
	"os"
	"path/filepath"
	"strings"
)

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
