package openclawinstall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInstallRefusesACheckout: a --dir holding the plugin's manifest and
// other files (a checkout of openclaw-plugin/) is not ours: install and
// uninstall refuse, name the unexpected entries, and touch nothing.
func TestInstallRefusesACheckout(t *testing.T) {
	setup(t, "", nil)
	dir := filepath.Join(t.TempDir(), "openclaw-plugin")
	os.MkdirAll(filepath.Join(dir, "test"), 0o755)
	for name, body := range map[string]string{
		"openclaw.plugin.json": `{"id":"brainsurgeon"}`, "index.js": "// work in progress", "embed.go": "package openclawplugin",
		"test/a.test.js": "x",
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	_, err := Install(context.Background(), Env{}, InstallOptions{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "embed.go") || !strings.Contains(err.Error(), "test/") {
		t.Fatalf("install: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "index.js")); string(b) != "// work in progress" {
		t.Errorf("index.js replaced: %q", b)
	}
	// The same dir at the stable path, with no record: uninstall refuses.
	stable := filepath.Join(os.Getenv("OPENCLAW_STATE_DIR"), ".brainsurgeon", "openclaw-plugin")
	os.MkdirAll(filepath.Dir(stable), 0o700)
	if err := os.Rename(dir, stable); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(context.Background(), Env{}, UninstallOptions{}); err == nil || !strings.Contains(err.Error(), "embed.go") {
		t.Fatalf("uninstall: %v", err)
	}
	if _, err := os.Stat(filepath.Join(stable, "test", "a.test.js")); err != nil {
		t.Errorf("uninstall removed the user's files: %v", err)
	}
}

// TestUninstallRemovesOnlyWrittenFiles: the record lists the files
// written; a file the user added to the plugin dir after install makes
// uninstall refuse before it changes anything, and once it is gone
// uninstall removes the files and the dir.
func TestUninstallRemovesOnlyWrittenFiles(t *testing.T) {
	root := setup(t, "", []byte(`{"a":1}`))
	ctx := context.Background()
	res, err := Install(ctx, Env{}, InstallOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := ReadRecord(res.RecordPath)
	slices.Sort(rec.Files)
	if err != nil || !slices.Equal(rec.Files, pluginFiles(t)) {
		t.Fatalf("record files %q, %v", rec.Files, err)
	}
	mine := filepath.Join(res.PluginDir, "notes.txt")
	os.WriteFile(mine, []byte("mine"), 0o644)
	cfgBefore := readOrNil(t, filepath.Join(root, "openclaw.json"))
	if _, err := Uninstall(ctx, Env{}, UninstallOptions{}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("uninstall with a foreign file: %v", err)
	}
	if b := readOrNil(t, filepath.Join(root, "openclaw.json")); string(b) != string(cfgBefore) {
		t.Errorf("config changed by a refused uninstall:\n%s", b)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatal(err)
	}
	// A reinstall refuses too.
	if _, err := Install(ctx, Env{}, InstallOptions{Link: true}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("reinstall with a foreign file: %v", err)
	}
	os.Remove(mine)
	// A file an older version wrote (in the record) is removed too.
	os.WriteFile(filepath.Join(res.PluginDir, "old.js"), []byte("x"), 0o644)
	rec.Files = append(rec.Files, "old.js")
	if err := writeRecord(res.RecordPath, rec); err != nil {
		t.Fatal(err)
	}
	if un, err := Uninstall(ctx, Env{}, UninstallOptions{}); err != nil || un.ConfigAction != "restored" {
		t.Fatalf("uninstall: %+v %v", un, err)
	}
	if _, err := os.Stat(res.PluginDir); !os.IsNotExist(err) {
		t.Errorf("plugin dir after uninstall: %v", err)
	}
}

// TestUninstallHandLinked: after an install without --link whose printed
// commands the user ran, uninstall refuses (naming the commands) and
// changes nothing, unless told to take the plugin out with OpenClaw's CLI.
func TestUninstallHandLinked(t *testing.T) {
	for _, how := range []string{"load path", "entry only"} {
		t.Run(how, func(t *testing.T) {
			root := setup(t, "", []byte(`{"gateway":{"port":1}}`))
			cfgPath := filepath.Join(root, "openclaw.json")
			ctx := context.Background()
			res, err := Install(ctx, Env{}, InstallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := `{"gateway":{"port":1},"plugins":{"load":{"paths":["` + res.PluginDir + `"]},"entries":{"brainsurgeon":{"enabled":true}}}}`
			if how == "entry only" {
				cfg = "{gateway: {port: 1}, plugins: {entries: {brainsurgeon: {enabled: true}}}} // JSON5"
			}
			os.WriteFile(cfgPath, []byte(cfg), 0o600)
			plan, err := PlanUninstall(Env{}, "")
			if err != nil || !plan.HandLinked || plan.Linked || len(plan.Commands) != 2 {
				t.Fatalf("plan %+v %v", plan, err)
			}
			if st, _ := Status(Env{}, ""); !st.ConfigHasEntry || st.ConfigNamesPlugin != (how == "load path") {
				t.Errorf("status %+v", st)
			}
			_, err = Uninstall(ctx, Env{}, UninstallOptions{})
			var hl *HandLinkedError
			if !errors.As(err, &hl) || !strings.Contains(err.Error(), "openclaw config unset plugins.entries.brainsurgeon") {
				t.Fatalf("uninstall: %v", err)
			}
			if _, err := os.Stat(res.KeyFile); err != nil {
				t.Errorf("key removed by a refused uninstall: %v", err)
			}
			checkPlugin(t, res.PluginDir)
			if how == "entry only" {
				// The fake CLI reads JSON only; write what OpenClaw would.
				os.WriteFile(cfgPath, []byte(`{"gateway":{"port":1},"plugins":{"entries":{"brainsurgeon":{"enabled":true}}}}`), 0o600)
			}
			un, err := Uninstall(ctx, Env{}, UninstallOptions{UnlinkHandLinked: true})
			if err != nil || un.ConfigAction != "entries_removed" || len(un.Commands) != 2 {
				t.Fatalf("uninstall --yes: %+v %v", un, err)
			}
			after := string(readOrNil(t, cfgPath))
			if strings.Contains(after, PluginID) || !strings.Contains(after, `"port": 1`) {
				t.Errorf("config after uninstall:\n%s", after)
			}
			if _, err := os.Stat(filepath.Join(root, ".brainsurgeon")); !os.IsNotExist(err) {
				t.Errorf(".brainsurgeon after uninstall: %v", err)
			}
		})
	}
}

// TestEnsureKeyTightensMode: an existing key others may read is kept and
// made 0600.
func TestEnsureKeyTightensMode(t *testing.T) {
	key := filepath.Join(t.TempDir(), "api.key")
	os.WriteFile(key, []byte("k\n"), 0o644)
	os.Chmod(key, 0o644)
	created, tightened, err := EnsureKey(key, nil)
	fi, _ := os.Stat(key)
	if err != nil || created || !tightened || fi.Mode().Perm() != 0o600 {
		t.Errorf("created %v tightened %v mode %v err %v", created, tightened, fi.Mode().Perm(), err)
	}
	if b, _ := os.ReadFile(key); string(b) != "k\n" {
		t.Errorf("key replaced: %q", b)
	}
	if _, tightened, _ := EnsureKey(key, nil); tightened {
		t.Error("a 0600 key tightened again")
	}
}
