package openclawinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// slotOf reads plugins.slots.contextEngine from the config at path (""
// when unset), failing on a config that is not JSON.
func slotOf(t *testing.T, path string) string {
	t.Helper()
	var c struct {
		Plugins struct {
			Slots map[string]string `json:"slots"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(readOrNil(t, path), &c); err != nil {
		t.Fatalf("config %s: %v", path, err)
	}
	return c.Plugins.Slots["contextEngine"]
}

// TestInstallEngineLinked: install --engine --link selects the engine in
// the same config patch and records the slot it replaced; status shows
// it; uninstall puts the slot back, by restoring the bytes when nothing
// else changed and through OpenClaw's CLI when something did.
func TestInstallEngineLinked(t *testing.T) {
	for _, tc := range []struct {
		name, version, prev string
		changed             bool // the config changes after install
		wantAfter           string
	}{
		{"unset, restored", "2026.9.6", "", false, ""},
		{"other engine, restored", "2026.9.6", "lossless-claw", false, "lossless-claw"},
		{"unset, entries removed 9.x", "2026.9.6", "", true, "legacy"},
		{"unset, entries removed 7.x", "2026.7.35", "", true, "legacy"},
		{"other engine, entries removed", "2026.9.6", "lossless-claw", true, "lossless-claw"},
		{"legacy, entries removed 7.x", "2026.7.35", "legacy", true, "legacy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := []byte(`{"gateway":{"port":1}}`)
			if tc.prev != "" {
				config = []byte(`{"gateway":{"port":1},"plugins":{"slots":{"contextEngine":"` + tc.prev + `"}}}`)
			}
			root := setup(t, tc.version, config)
			cfgPath := filepath.Join(root, "openclaw.json")
			ctx := context.Background()
			res, err := Install(ctx, Env{}, InstallOptions{Link: true, Engine: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.EngineSlot != PluginID || res.EnginePrevious != tc.prev || len(res.Commands) != 2 {
				t.Errorf("install result: slot %q, previous %q, commands %q", res.EngineSlot, res.EnginePrevious, res.Commands)
			}
			if got := slotOf(t, cfgPath); got != PluginID {
				t.Fatalf("slot after install %q, expected %q", got, PluginID)
			}
			rec, _, err := ReadRecord(filepath.Join(root, ".brainsurgeon", "openclaw-install.json"))
			if err != nil || !rec.Engine || rec.EnginePrevious != tc.prev {
				t.Errorf("record: engine %v, previous %q, %v", rec.Engine, rec.EnginePrevious, err)
			}
			// Installing again keeps the first previous value.
			if again, err := Install(ctx, Env{}, InstallOptions{Link: true, Engine: true}); err != nil || again.EnginePrevious != tc.prev {
				t.Fatalf("second install: %+v, %v", again, err)
			}
			st, err := Status(Env{}, "")
			if err != nil || st.EngineSlot != PluginID || !st.EngineSelected || !st.EngineByInstall || st.EnginePrevious != tc.prev {
				t.Errorf("status: %+v, %v", st, err)
			}
			if tc.changed {
				var cfg map[string]any
				json.Unmarshal(readOrNil(t, cfgPath), &cfg)
				cfg["update"] = map[string]any{"checkOnStart": false}
				b, _ := json.Marshal(cfg)
				os.WriteFile(cfgPath, b, 0o600)
			}
			un, err := Uninstall(ctx, Env{}, UninstallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.wantAfter
			if want == "" {
				want = "legacy"
			}
			if un.EngineSlot != want {
				t.Errorf("uninstall result slot %q, expected %q", un.EngineSlot, want)
			}
			if got := slotOf(t, cfgPath); got != tc.wantAfter {
				t.Errorf("slot after uninstall %q, expected %q", got, tc.wantAfter)
			}
			if !tc.changed && !bytes.Equal(readOrNil(t, cfgPath), config) {
				t.Errorf("config not restored:\n%s", readOrNil(t, cfgPath))
			}
			if tc.changed && (un.ConfigAction != "entries_removed" || !strings.Contains(string(readOrNil(t, cfgPath)), "checkOnStart")) {
				t.Errorf("uninstall %+v; config:\n%s", un, readOrNil(t, cfgPath))
			}
		})
	}
}

// TestEngineSlotChangedByUser: a slot the user pointed elsewhere after
// install --engine is left alone by uninstall.
func TestEngineSlotChangedByUser(t *testing.T) {
	root := setup(t, "", []byte(`{}`))
	cfgPath := filepath.Join(root, "openclaw.json")
	ctx := context.Background()
	if _, err := Install(ctx, Env{}, InstallOptions{Link: true, Engine: true}); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(readOrNil(t, cfgPath), &cfg)
	cfg["plugins"].(map[string]any)["slots"] = map[string]any{"contextEngine": "lossless-claw"}
	b, _ := json.Marshal(cfg)
	os.WriteFile(cfgPath, b, 0o600)
	if st, _ := Status(Env{}, ""); st.EngineSelected || st.EngineSlot != "lossless-claw" {
		t.Errorf("status %+v", st)
	}
	un, err := Uninstall(ctx, Env{}, UninstallOptions{})
	if err != nil || un.ConfigAction != "entries_removed" {
		t.Fatalf("uninstall %+v, %v", un, err)
	}
	if got := slotOf(t, cfgPath); got != "lossless-claw" {
		t.Errorf("slot after uninstall %q, expected the user's lossless-claw", got)
	}
}

// TestInstallEngineWithoutLink prints the slot in the snippet and changes
// nothing; without --engine neither snippet nor status select it.
func TestInstallEngineWithoutLink(t *testing.T) {
	root := setup(t, "", []byte(`{"a":1}`))
	ctx := context.Background()
	plain, err := Install(ctx, Env{}, InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.Snippet, "contextEngine") || plain.EngineSlot != "" {
		t.Errorf("install without --engine selects it:\n%s", plain.Snippet)
	}
	res, err := Install(ctx, Env{}, InstallOptions{Engine: true})
	if err != nil {
		t.Fatal(err)
	}
	var snip struct {
		Plugins struct {
			Slots   map[string]string `json:"slots"`
			Entries map[string]any    `json:"entries"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(res.Snippet), &snip); err != nil {
		t.Fatalf("snippet: %v\n%s", err, res.Snippet)
	}
	if snip.Plugins.Slots["contextEngine"] != PluginID || snip.Plugins.Entries[PluginID] == nil || res.EngineSlot != PluginID {
		t.Errorf("snippet:\n%s", res.Snippet)
	}
	if b := readOrNil(t, filepath.Join(root, "openclaw.json")); string(b) != `{"a":1}` {
		t.Errorf("config changed: %s", b)
	}
	st, err := Status(Env{}, "")
	if err != nil || st.EngineSlot != "legacy" || st.EngineSelected || st.EngineByInstall {
		t.Errorf("status %+v, %v", st, err)
	}
}

// TestUninstallHandSelectedEngine: a config whose slot selects the engine
// by hand (no link by install) counts as naming the plugin: uninstall asks,
// then takes it out and puts the slot back to legacy.
func TestUninstallHandSelectedEngine(t *testing.T) {
	root := setup(t, "2026.7.35", []byte(`{"gateway":{"port":1}}`))
	cfgPath := filepath.Join(root, "openclaw.json")
	ctx := context.Background()
	res, err := Install(ctx, Env{}, InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfgPath, []byte(`{"gateway":{"port":1},"plugins":{"slots":{"contextEngine":"brainsurgeon"}}}`), 0o600)
	if st, _ := Status(Env{}, ""); !st.EngineSelected || st.EngineByInstall {
		t.Errorf("status %+v", st)
	}
	plan, err := PlanUninstall(Env{}, "")
	if err != nil || !plan.HandLinked || len(plan.Commands) != 3 || !strings.Contains(plan.Commands[2], "plugins.slots.contextEngine legacy") {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	if _, err := Uninstall(ctx, Env{}, UninstallOptions{}); err == nil || !strings.Contains(err.Error(), "openclaw config set plugins.slots.contextEngine legacy") {
		t.Fatalf("uninstall without consent: %v", err)
	}
	checkPlugin(t, res.PluginDir)
	un, err := Uninstall(ctx, Env{}, UninstallOptions{UnlinkHandLinked: true})
	if err != nil || un.ConfigAction != "entries_removed" || un.EngineSlot != "legacy" {
		t.Fatalf("uninstall: %+v, %v", un, err)
	}
	if got := slotOf(t, cfgPath); got != "legacy" {
		t.Errorf("slot after uninstall %q", got)
	}
}

// TestConfigEngineSlot reads the slot from JSON and from JSON5.
func TestConfigEngineSlot(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"plugins":{"slots":{"contextEngine":"brainsurgeon"}}}`:   "brainsurgeon",
		`{"plugins":{"slots":{"contextEngine":" legacy "}}}`:       "legacy",
		`{"plugins":{"slots":{"memory":"x"}}}`:                     "",
		`{"plugins":{"slots":{"contextEngine":5}}}`:                "",
		"{plugins: {slots: {contextEngine: 'brainsurgeon'}}} // x": "brainsurgeon",
		"{plugins: {}} // JSON5":                                   "",
		``:                                                         "",
	} {
		if got := configEngineSlot([]byte(cfg)); got != want {
			t.Errorf("configEngineSlot(%s) = %q, expected %q", cfg, got, want)
		}
	}
}

// TestInstallUndoesSlotSelection: the manifest declares "kind":
// "context-engine", so OpenClaw's `plugins install` selects the engine
// (and 2026.7 disables the plugin the slot named). install without
// --engine puts the slot back; with or without it, the other plugin
// stays as it was.
func TestInstallUndoesSlotSelection(t *testing.T) {
	for _, tc := range []struct {
		name, version, config string
		engine                bool
		wantSlot              string // "" when unset
	}{
		{"no config", "2026.9.6", "", false, ""},
		{"unset 9.x", "2026.9.6", `{"gateway":{"port":1}}`, false, ""},
		{"unset 7.x", "2026.7.35", `{"gateway":{"port":1}}`, false, ""},
		{"legacy 7.x", "2026.7.35", `{"plugins":{"slots":{"contextEngine":"legacy"}}}`, false, "legacy"},
		{"other engine 7.x", "2026.7.35", `{"plugins":{"slots":{"contextEngine":"lossless-claw"},"entries":{"lossless-claw":{"enabled":true}}}}`, false, "lossless-claw"},
		{"other engine, no entry, 7.x", "2026.7.35", `{"plugins":{"slots":{"contextEngine":"lossless-claw"}}}`, false, "lossless-claw"},
		{"other engine, JSON5, 7.x", "2026.7.35", "// c\n{plugins: {slots: {contextEngine: 'lossless-claw'}, entries: {'lossless-claw': {config: {}}}}}", false, "lossless-claw"},
		{"other engine, --engine, 7.x", "2026.7.35", `{"plugins":{"slots":{"contextEngine":"lossless-claw"},"entries":{"lossless-claw":{"enabled":true}}}}`, true, PluginID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var config []byte
			if tc.config != "" {
				config = []byte(tc.config)
			}
			root := setup(t, tc.version, config)
			cfgPath := filepath.Join(root, "openclaw.json")
			if _, err := Install(context.Background(), Env{}, InstallOptions{Link: true, Engine: tc.engine}); err != nil {
				t.Fatal(err)
			}
			after := readOrNil(t, cfgPath)
			if got := slotOf(t, cfgPath); got != tc.wantSlot {
				t.Errorf("slot after install %q, expected %q\n%s", got, tc.wantSlot, after)
			}
			var c struct {
				Plugins struct {
					Entries map[string]map[string]any `json:"entries"`
				} `json:"plugins"`
			}
			json.Unmarshal(after, &c)
			if e, ok := c.Plugins.Entries["lossless-claw"]; ok && e["enabled"] == false {
				t.Errorf("install disabled lossless-claw:\n%s", after)
			}
			if strings.Contains(tc.config, "'lossless-claw': {config") && c.Plugins.Entries["lossless-claw"]["config"] == nil {
				t.Errorf("install dropped lossless-claw's config:\n%s", after)
			}
			if strings.Contains(tc.config, "entries") != (c.Plugins.Entries["lossless-claw"] != nil) {
				t.Errorf("lossless-claw's entry appeared or went:\n%s", after)
			}
		})
	}
}

// TestLinkPatch: what the patch adds to ConfigPatch, and that a config it
// cannot read leaves it as ConfigPatch.
func TestLinkPatch(t *testing.T) {
	base := string(ConfigPatch("http://127.0.0.1:8000", "/k", false))
	for _, tc := range []struct {
		name, before, linked string
		want                 string
	}{
		{"nothing changed", `{}`, `{"plugins":{"entries":{"brainsurgeon":{"enabled":true}}}}`, base},
		{"slot set from none", ``, `{"plugins":{"slots":{"contextEngine":"brainsurgeon"}}}`,
			`{"plugins":{"entries":{"brainsurgeon":{"config":{"apiKeyFile":"/k","daemonUrl":"http://127.0.0.1:8000"}}},"slots":{"contextEngine":null}}}`},
		{"slot set from legacy, JSON5", `{plugins: {slots: {contextEngine: 'legacy'}}}`, `{"plugins":{"slots":{"contextEngine":"brainsurgeon"}}}`,
			`{"plugins":{"entries":{"brainsurgeon":{"config":{"apiKeyFile":"/k","daemonUrl":"http://127.0.0.1:8000"}}},"slots":{"contextEngine":"legacy"}}}`},
		{"other disabled", `{"plugins":{"entries":{"a":{"enabled":true},"b":{"x":1},"d":{"enabled":false}}}}`,
			`{"plugins":{"entries":{"a":{"enabled":false},"b":{"x":1,"enabled":false},"c":{"enabled":false},"d":{"enabled":false}}}}`,
			`{"plugins":{"entries":{"a":{"enabled":true},"b":{"enabled":null},"brainsurgeon":{"config":{"apiKeyFile":"/k","daemonUrl":"http://127.0.0.1:8000"}},"c":null}}}`},
		{"unreadable before", `{`, `{"plugins":{"slots":{"contextEngine":"brainsurgeon"}}}`, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if tc.before != "" {
				before = []byte(tc.before)
			}
			if got := string(LinkPatch("http://127.0.0.1:8000", "/k", false, before, []byte(tc.linked))); got != tc.want {
				t.Errorf("LinkPatch =\n%s\nexpected\n%s", got, tc.want)
			}
		})
	}
}
