package config

import (
	"os"
	"path/filepath"
	"strings"
)

// PiSessionsOff is the value of BRAINSURGEON_PI_SESSIONS_DIR that serves
// no pi sessions beside the agents dir.
const PiSessionsOff = "off"

// PiSessionsDir returns the pi sessions dir whose sessions are served
// beside the agents dir's, reading the environment and the home directory
// of this process (see PiSessionsDirFrom).
func PiSessionsDir() (dir string, explicit bool, err error) {
	return PiSessionsDirFrom(os.Getenv, os.UserHomeDir, dirExists)
}

// PiSessionsDirFrom returns the pi sessions dir to serve beside the
// agents dir, and whether it was named explicitly:
//   - BRAINSURGEON_PI_SESSIONS_DIR, when set: "off" (or "none") serves no
//     pi sessions (""), any other value is the dir ("~/" expanded), named
//     explicitly, so a missing one is an error for whoever opens it;
//   - else pi's own: "$PI_CODING_AGENT_DIR/sessions", or
//     "~/.pi/agent/sessions", when that directory exists, and "" when it
//     does not (pi is not installed, or has never saved a session).
//
// getenv, homeDir and exists stand for os.Getenv, os.UserHomeDir and a
// directory test. The error says a path to expand starts with "~" and the
// home directory is unknown; with no home directory and nothing set, no pi
// sessions are served.
func PiSessionsDirFrom(getenv func(string) string, homeDir func() (string, error), exists func(string) bool) (dir string, explicit bool, err error) {
	expand := func(p string) (string, error) { return expandHome(p, homeDir) }
	if v := strings.TrimSpace(getenv("BRAINSURGEON_PI_SESSIONS_DIR")); v != "" {
		if strings.EqualFold(v, PiSessionsOff) || strings.EqualFold(v, "none") {
			return "", true, nil
		}
		d, err := expand(v)
		return d, true, err
	}
	var d string
	if a := strings.TrimSpace(getenv("PI_CODING_AGENT_DIR")); a != "" {
		x, err := expand(a)
		if err != nil {
			return "", false, err
		}
		d = filepath.Join(x, "sessions")
	} else {
		home, err := homeDir()
		if err != nil || home == "" {
			return "", false, nil // no home: no pi dir to find
		}
		d = filepath.Join(home, ".pi", "agent", "sessions")
	}
	if !exists(d) {
		return "", false, nil
	}
	return d, false, nil
}

// dirExists reports whether p is a directory.
func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
