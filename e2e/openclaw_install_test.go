//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	openclawplugin "github.com/brainsurgeon/brainsurgeon/openclaw-plugin"
)

// TestOpenClawInstallRoundTrip runs `brainsurgeon openclaw install --link --yes` and `uninstall --yes` with the
// real OpenClaw CLI (2026.9.6 and 2026.7.35) on a private state dir whose config is JSON5 with a comment
// (OpenClaw rewrites it without the comment):
//
//	a. install links the plugin dir and sets daemonUrl and apiKeyFile, as OpenClaw's own `config get` reads them;
//	   the context-engine slot stays unset (the manifest's "kind": "context-engine" makes OpenClaw's `plugins install`
//	   select the engine; install without --engine puts that back), and `plugins inspect --runtime --json` lists
//	   the engine as a capability of the plugin;
//	b. uninstall then leaves the config byte-identical to before, and removes every file install made;
//	c. (2026.9.6) when the config changed after install, uninstall takes out only the brainsurgeon entries and
//	   keeps the other change.
func TestOpenClawInstallRoundTrip(t *testing.T) {
	var manifest struct {
		ConfigSchema struct {
			Properties map[string]any `json:"properties"`
		} `json:"configSchema"`
	}
	b, err := fs.ReadFile(openclawplugin.Files(), "openclaw.plugin.json")
	if err == nil {
		err = json.Unmarshal(b, &manifest)
	}
	if err != nil {
		t.Fatal(err)
	}
	if manifest.ConfigSchema.Properties["daemonUrl"] == nil {
		t.Fatal("the embedded plugin's config schema declares no daemonUrl, so OpenClaw would refuse the config install writes")
	}
	for _, version := range []string{openclaw.V9, openclaw.V7} {
		t.Run(version, func(t *testing.T) {
			t.Parallel() // each release on a state dir (and HOME) of its own
			in := openclaw.Require(t, version)
			st, err := openclaw.NewState(t.TempDir(), openclaw.ConfigOptions{MockURL: "http://127.0.0.1:9"})
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := os.ReadFile(st.ConfigPath())
			before := append([]byte("// a JSON5 comment OpenClaw drops when it writes\n"), cfg...)
			if err := os.WriteFile(st.ConfigPath(), before, 0o600); err != nil {
				t.Fatal(err)
			}
			wrapper := openclawWrapper(t, t.TempDir(), in)
			env := st.Vars(openclaw.NewEnv(in.Node))
			run := func(bin string, args ...string) (string, error) { return runEnv(env, bin, args...) }
			start := time.Now()
			out, err := run(bsBin, "openclaw", "install", "--link", "--yes", "--openclaw", wrapper, "--daemon-url", "http://127.0.0.1:8123", "--json")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("install --link took %s", time.Since(start).Round(time.Millisecond))
			var res struct {
				PluginDir       string `json:"plugin_dir"`
				KeyFile         string `json:"key_file"`
				OpenClawVersion string `json:"openclaw_version"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.OpenClawVersion != version {
				t.Fatalf("install output %v:\n%s", err, out)
			}
			// a. OpenClaw writes plain JSON; its own reader must see the plugin's config too (config get
			// redacts apiKeyFile, a name with "apiKey" in it, so that one is read from the file).
			var cfgAfter struct {
				Plugins struct {
					Load    struct{ Paths []string }
					Entries map[string]struct {
						Enabled bool
						Config  map[string]string
					}
				}
			}
			raw, _ := os.ReadFile(st.ConfigPath())
			if err := json.Unmarshal(raw, &cfgAfter); err != nil {
				t.Fatalf("a: config after install: %v\n%s", err, raw)
			}
			if strings.Contains(string(raw), "contextEngine") {
				t.Errorf("a: install without --engine left a context-engine slot:\n%s", raw)
			}
			e := cfgAfter.Plugins.Entries["brainsurgeon"]
			if len(cfgAfter.Plugins.Load.Paths) != 1 || cfgAfter.Plugins.Load.Paths[0] != res.PluginDir || !e.Enabled || e.Config["apiKeyFile"] != res.KeyFile {
				t.Errorf("a: config after install:\n%s", raw)
			}
			if got, err := run(wrapper, "config", "get", "plugins.entries.brainsurgeon.config.daemonUrl"); err != nil || strings.TrimSpace(got) != "http://127.0.0.1:8123" {
				t.Errorf("a: config get daemonUrl = %q, %v", got, err)
			}
			if after, _ := os.ReadFile(st.ConfigPath()); bytes.Equal(after, before) {
				t.Fatal("a: install --link left the config as it was")
			}
			start = time.Now()
			if got, err := run(wrapper, "plugins", "inspect", "brainsurgeon", "--runtime", "--json"); err != nil {
				t.Errorf("a: plugins inspect: %v", err)
			} else if err := checkEngineCapability([]byte(got)); err != nil {
				t.Errorf("a: plugins inspect brainsurgeon --runtime --json: %v\n%s", err, got)
			}
			t.Logf("plugins inspect took %s", time.Since(start).Round(time.Millisecond))
			// b.
			if out, err := run(bsBin, "openclaw", "uninstall", "--yes", "--json"); err != nil || !strings.Contains(out, `"restored"`) {
				t.Fatalf("b: uninstall: %v\n%s", err, out)
			}
			if after, _ := os.ReadFile(st.ConfigPath()); !bytes.Equal(after, before) {
				t.Errorf("b: config after uninstall:\n%s\nwant\n%s", after, before)
			}
			if _, err := os.Stat(filepath.Join(st.Dir, ".brainsurgeon")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("b: .brainsurgeon after uninstall: %v", err)
			}
			if version != openclaw.V9 {
				return
			}
			// c.
			if _, err := run(bsBin, "openclaw", "install", "--link", "--yes", "--openclaw", wrapper); err != nil {
				t.Fatal(err)
			}
			if _, err := run(wrapper, "config", "set", "gateway.port", "19555", "--strict-json"); err != nil {
				t.Fatal(err)
			}
			out, err = run(bsBin, "openclaw", "uninstall", "--yes", "--json")
			if err != nil || !strings.Contains(out, `"entries_removed"`) {
				t.Fatalf("c: uninstall: %v\n%s", err, out)
			}
			after, _ := os.ReadFile(st.ConfigPath())
			if strings.Contains(string(after), "brainsurgeon") || !strings.Contains(string(after), "19555") {
				t.Errorf("c: config after uninstall:\n%s", after)
			}
		})
	}
}

// checkEngineCapability checks the output of `openclaw plugins inspect brainsurgeon --runtime --json`: the plugin is
// loaded, of kind "context-engine", and lists the engine "brainsurgeon" among its capabilities (OpenClaw lists a
// registered engine there only when the manifest declares that kind).
func checkEngineCapability(out []byte) error {
	var r struct {
		Plugin struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Kind   any    `json:"kind"`
		} `json:"plugin"`
		Capabilities []struct {
			Kind string   `json:"kind"`
			IDs  []string `json:"ids"`
		} `json:"capabilities"`
	}
	// The JSON is the whole output; a warning line before it is skipped.
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return fmt.Errorf("expected JSON: %v", err)
	}
	if r.Plugin.ID != "brainsurgeon" || r.Plugin.Status != "loaded" || r.Plugin.Kind != "context-engine" {
		return fmt.Errorf("expected the plugin brainsurgeon loaded, of kind context-engine; found id %q, status %q, kind %v", r.Plugin.ID, r.Plugin.Status, r.Plugin.Kind)
	}
	for _, c := range r.Capabilities {
		if c.Kind == "context-engine" && len(c.IDs) == 1 && c.IDs[0] == "brainsurgeon" {
			return nil
		}
	}
	return fmt.Errorf("expected the capability {kind: context-engine, ids: [brainsurgeon]}; found %+v", r.Capabilities)
}

// openclawWrapper writes dir/openclaw, a script that runs in's CLI with its Node (as a user's openclaw on PATH),
// and returns its path.
func openclawWrapper(t *testing.T, dir string, in openclaw.Install) string {
	t.Helper()
	wrapper := filepath.Join(dir, "openclaw")
	script := fmt.Sprintf("#!/bin/sh\nexec %q %q \"$@\"\n", in.Node, in.Entry())
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// runEnv runs bin with args in the environment env (bounded to 3 minutes) and returns its standard output; a
// failure's error holds both outputs.
func runEnv(env []string, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w\nstdout: %s\nstderr: %s", filepath.Base(bin), strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), err
}
