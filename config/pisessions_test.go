package config_test

import (
	"errors"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/config"
)

// TestPiSessionsDirFrom covers the setting, pi's own variable, pi's default
// dir present and absent, and a home directory that is unknown.
func TestPiSessionsDirFrom(t *testing.T) {
	home := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	has := func(dirs ...string) func(string) bool {
		return func(p string) bool {
			for _, d := range dirs {
				if d == p {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		home     func() (string, error)
		exists   func(string) bool
		dir      string
		explicit bool
		err      bool
	}{
		{"pi's default dir", nil, home, has("/home/u/.pi/agent/sessions"), "/home/u/.pi/agent/sessions", false, false},
		{"pi not installed", nil, home, has(), "", false, false},
		{"PI_CODING_AGENT_DIR", map[string]string{"PI_CODING_AGENT_DIR": "/opt/pi"}, home, has("/opt/pi/sessions"), "/opt/pi/sessions", false, false},
		{"PI_CODING_AGENT_DIR with ~", map[string]string{"PI_CODING_AGENT_DIR": "~/pi"}, home, has("/home/u/pi/sessions"), "/home/u/pi/sessions", false, false},
		{"PI_CODING_AGENT_DIR without sessions", map[string]string{"PI_CODING_AGENT_DIR": "/opt/pi"}, home, has("/home/u/.pi/agent/sessions"), "", false, false},
		{"set", map[string]string{"BRAINSURGEON_PI_SESSIONS_DIR": "/srv/pi"}, home, has(), "/srv/pi", true, false},
		{"set with ~", map[string]string{"BRAINSURGEON_PI_SESSIONS_DIR": "~/s"}, home, has(), "/home/u/s", true, false},
		{"off", map[string]string{"BRAINSURGEON_PI_SESSIONS_DIR": "off"}, home, has("/home/u/.pi/agent/sessions"), "", true, false},
		{"none", map[string]string{"BRAINSURGEON_PI_SESSIONS_DIR": " None "}, home, has("/home/u/.pi/agent/sessions"), "", true, false},
		{"no home, nothing set", nil, noHome, has(), "", false, false},
		{"no home, ~ set", map[string]string{"BRAINSURGEON_PI_SESSIONS_DIR": "~/s"}, noHome, has(), "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, explicit, err := config.PiSessionsDirFrom(func(k string) string { return tc.env[k] }, tc.home, tc.exists)
			if (err != nil) != tc.err || dir != tc.dir || explicit != tc.explicit {
				t.Fatalf("PiSessionsDirFrom = %q, %v, %v; want %q, %v, error %v", dir, explicit, err, tc.dir, tc.explicit, tc.err)
			}
		})
	}
}
