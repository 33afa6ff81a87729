package openclawinstall

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/hostconfig"
)

// TestMain makes the test binary act as a fake `openclaw` when
// BS_FAKE_OPENCLAW is set: fakeOpenClawDir puts a script on PATH that
// runs it so.
func TestMain(m *testing.M) {
	if os.Getenv("BS_FAKE_OPENCLAW") == "1" {
		os.Exit(fakeOpenClaw(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeOpenClawDir writes an executable "openclaw" into a new directory
// and returns the directory. The fake reports version (2026.9.6 when
// empty), logs each call to <dir>/calls, and edits $OPENCLAW_CONFIG_PATH
// (JSON or JSON5) as the real CLI does: it rewrites the whole file (indented, with a meta
// member), links a plugin into plugins.load.paths and
// plugins.entries.<id>.enabled, merges `config patch` objects (null
// deletes), selects the context-engine slot of a plugin of that kind
// (2026.7 disabling the plugin the slot named) and, on `plugins uninstall`, drops the load path, leaves
// entries.<id> as {enabled:false} and resets a context-engine slot naming
// the plugin (2026.7: to "legacy"; later: deletes it).
func fakeOpenClawDir(t *testing.T, version string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if version == "" {
		version = "2026.9.6"
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nBS_FAKE_OPENCLAW=1 FAKE_OC_VERSION=%s FAKE_OC_LOG=%s exec %s \"$@\"\n", version, filepath.Join(dir, "calls"), exe)
	if err := os.WriteFile(filepath.Join(dir, "openclaw"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func fakeOpenClaw(args []string) int {
	version := os.Getenv("FAKE_OC_VERSION")
	if f, err := os.OpenFile(os.Getenv("FAKE_OC_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintln(f, strings.Join(args, " "))
		f.Close()
	}
	old := strings.HasPrefix(version, "2026.7.")
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", a...)
		return 1
	}
	if len(args) == 1 && args[0] == "--version" {
		fmt.Printf("OpenClaw %s (fake)\n", version)
		return 0
	}
	path := os.Getenv("OPENCLAW_CONFIG_PATH")
	cfg := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if b, err = hostconfig.ToJSON(b); err == nil {
			err = json.Unmarshal(b, &cfg)
		}
		if err != nil {
			return fail("fake openclaw: config %s: %v", path, err)
		}
	}
	obj := func(m map[string]any, k string) map[string]any {
		v, ok := m[k].(map[string]any)
		if !ok {
			v = map[string]any{}
			m[k] = v
		}
		return v
	}
	switch {
	case len(args) >= 4 && args[0] == "plugins" && args[1] == "install" && args[2] == "--link":
		flags := args[4:]
		if old && len(flags) > 0 {
			return fail("OpenClaw does not recognize option %q.", flags[len(flags)-1])
		}
		if !old && !(slices.Contains(flags, "--force") && slices.Contains(flags, "--accept-capabilities")) {
			return fail("Install cancelled; rerun with --force")
		}
		dir := args[3]
		b, err := os.ReadFile(filepath.Join(dir, "openclaw.plugin.json"))
		var m struct{ ID, Kind string }
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			return fail("fake openclaw: no plugin manifest in %s: %v", dir, err)
		}
		pl := obj(cfg, "plugins")
		load := obj(pl, "load")
		paths, _ := load["paths"].([]any)
		if !slices.Contains(paths, any(dir)) {
			load["paths"] = append(paths, dir)
		}
		obj(obj(pl, "entries"), m.ID)["enabled"] = true
		if m.Kind == "context-engine" {
			// OpenClaw's slot selection: the plugin takes the slot; 2026.7 also disables the other
			// context-engine plugins (here: the one the slot named).
			slots := obj(pl, "slots")
			if other, _ := slots["contextEngine"].(string); old && other != "" && other != "legacy" && other != m.ID {
				obj(obj(pl, "entries"), other)["enabled"] = false
			}
			slots["contextEngine"] = m.ID
		}
	case len(args) == 3 && args[0] == "config" && args[1] == "patch" && args[2] == "--stdin":
		b, _ := io.ReadAll(os.Stdin)
		var patch map[string]any
		if err := json.Unmarshal(b, &patch); err != nil {
			return fail("fake openclaw: patch: %v", err)
		}
		merge(cfg, patch)
	case len(args) == 4 && args[0] == "plugins" && args[1] == "uninstall" && args[3] == "--force":
		pl := obj(cfg, "plugins")
		load := obj(pl, "load")
		paths, _ := load["paths"].([]any)
		var keep []any
		for _, p := range paths {
			if b, err := os.ReadFile(filepath.Join(p.(string), "openclaw.plugin.json")); err == nil && strings.Contains(string(b), `"`+args[2]+`"`) {
				continue
			}
			keep = append(keep, p)
		}
		if len(keep) == 0 {
			delete(pl, "load")
		} else {
			load["paths"] = keep
		}
		obj(pl, "entries")[args[2]] = map[string]any{"enabled": false}
		if slots, ok := pl["slots"].(map[string]any); ok && slots["contextEngine"] == args[2] {
			// 2026.7 sets the slot back to "legacy", 2026.8+ deletes it.
			if old {
				slots["contextEngine"] = "legacy"
			} else {
				delete(slots, "contextEngine")
			}
		}
	default:
		return fail("fake openclaw: unexpected arguments %q", args)
	}
	obj(cfg, "meta")["lastTouchedVersion"] = version
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fail("fake openclaw: %v", err)
	}
	return 0
}

// merge applies a JSON merge patch: objects merge, null deletes, anything
// else replaces.
func merge(dst, patch map[string]any) {
	for k, v := range patch {
		switch v := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			d, ok := dst[k].(map[string]any)
			if !ok {
				d = map[string]any{}
				dst[k] = d
			}
			merge(d, v)
		default:
			dst[k] = v
		}
	}
}
