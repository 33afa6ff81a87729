package config_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// newAgentsDir returns an agents directory inside a fresh temp directory,
// and the directory where the config goes.
func newAgentsDir(t *testing.T) (agentsDir, cfgDir string) {
	t.Helper()
	root := t.TempDir()
	agentsDir = filepath.Join(root, "agents")
	if err := os.Mkdir(agentsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return agentsDir, filepath.Join(root, ".brainsurgeon")
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// defaultFile is exactly what Save writes for Default() (a golden file).
var defaultFile = func() string {
	b, err := os.ReadFile(filepath.Join("testdata", "default.json"))
	if err != nil {
		panic(err) // test setup: the golden file is part of the package
	}
	return string(b)
}()

func TestLoadMissingFile(t *testing.T) {
	for _, tt := range []struct {
		name   string
		create bool // create an empty .brainsurgeon directory first
	}{
		{"NoDirectory", false},
		{"EmptyDirectory", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agentsDir, cfgDir := newAgentsDir(t)
			if tt.create {
				if err := os.Mkdir(cfgDir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			var log recorder
			c, err := config.Load(context.Background(), agentsDir, &log)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !sameConfig(c, config.Default()) {
				t.Errorf("Load = %+v, want the defaults", c)
			}
			if tt.create {
				if names := dirNames(t, cfgDir); len(names) != 0 {
					t.Errorf("Load created %q", names)
				}
			} else if _, err := os.Lstat(cfgDir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Load created %s (Lstat: %v)", cfgDir, err)
			}
			if lines := log.lines(); len(lines) != 0 {
				t.Errorf("Load of a missing file logged %q above Debug", lines)
			}
		})
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	agentsDir, cfgDir := newAgentsDir(t)
	ran := time.Date(2026, 2, 20, 17, 30, 0, 123456789, time.UTC)
	kept := time.Date(2026, 2, 21, 3, 0, 0, 0, time.FixedZone("", -5*3600))
	c := config.Config{
		Enabled:                 true,
		KeepRecent:              7,
		MinValueLength:          800,
		TriggerTypes:            []string{"thinking", "tool_result", "image"},
		AgeThresholdHours:       1.5,
		AutoCron:                "*/5 * * * *",
		Retention:               "1d12h",
		RetentionCron:           "0 3 * * *",
		RetentionScope:          "orphans",
		KeepPurgeControlCalls:   true,
		KeepAfterRestoreSeconds: 1200,
		IdleSeconds:             0,
		MinSavingTokens:         500,
		PreviewChars:            120,
		SourceOffloadAboveChars: 20000,
		SourcePreviewChars:      0,
		Compaction:              config.DefaultCompaction(),
		LastRunAt:               &ran,
		LastRetentionRunAt:      &kept,
	}
	if err := config.Save(agentsDir, c); err != nil {
		t.Fatalf("Save: %v", err)
	}
	var log recorder
	got, err := config.Load(context.Background(), agentsDir, &log)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !sameConfig(got, c) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, c)
	}
	if lines := log.lines(); len(lines) != 0 {
		t.Errorf("Load of a complete file logged %q", lines)
	}

	// The file's fields are in struct order.
	data, err := os.ReadFile(filepath.Join(cfgDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, name := range config.FieldNames() {
		i := bytes.Index(data, []byte(`"`+name+`":`))
		if i <= last {
			t.Errorf("field %s is missing or out of order in\n%s", name, data)
		}
		last = i
	}
}

func TestSaveFormat(t *testing.T) {
	agentsDir, cfgDir := newAgentsDir(t)
	if err := config.Save(agentsDir, config.Default()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(cfgDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != defaultFile {
		t.Errorf("Save wrote\n%s\nwant\n%s", data, defaultFile)
	}

	// A nil list is saved as an empty one, not as null.
	c := config.Default()
	c.TriggerTypes = nil
	if err := config.Save(agentsDir, c); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(filepath.Join(cfgDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"trigger_types": [],`)) {
		t.Errorf("nil TriggerTypes saved as\n%s", data)
	}
}

func TestSaveIsAtomic(t *testing.T) {
	agentsDir, cfgDir := newAgentsDir(t)
	path := filepath.Join(cfgDir, "config.json")

	t.Run("CreatesPrivateDirAndFile", func(t *testing.T) {
		if err := config.Save(agentsDir, config.Default()); err != nil {
			t.Fatal(err)
		}
		if names := dirNames(t, cfgDir); !slices.Equal(names, []string{"config.json"}) {
			t.Errorf("directory holds %q, want only config.json", names)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
		}
		di, err := os.Stat(cfgDir)
		if err != nil {
			t.Fatal(err)
		}
		if di.Mode().Perm() != 0o700 {
			t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
		}
	})

	t.Run("ReplacesAndStaysPrivate", func(t *testing.T) {
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		before, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		c := config.Default()
		c.Enabled = true
		if err := config.Save(agentsDir, c); err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(before, after) {
			t.Error("Save rewrote the file in place; want a new file renamed over it")
		}
		if after.Mode().Perm() != 0o600 {
			t.Errorf("file mode %v, want 0600", after.Mode().Perm())
		}
		if names := dirNames(t, cfgDir); !slices.Equal(names, []string{"config.json"}) {
			t.Errorf("directory holds %q, want only config.json", names)
		}
		got, err := config.Load(context.Background(), agentsDir, nil)
		if err != nil || !got.Enabled {
			t.Errorf("Load after Save = %+v, %v; want Enabled", got, err)
		}
	})

	t.Run("InvalidWritesNothing", func(t *testing.T) {
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c := config.Default()
		c.KeepRecent = -1
		c.Retention = "5x"
		err = config.Save(agentsDir, c)
		var ve *config.ValidationError
		if !errors.As(err, &ve) || len(ve.Errors) != 2 {
			t.Fatalf("Save of an invalid config = %v, want a *ValidationError with 2 errors", err)
		}
		now, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(now, old) {
			t.Errorf("Save of an invalid config changed the file to\n%s", now)
		}
		if names := dirNames(t, cfgDir); !slices.Equal(names, []string{"config.json"}) {
			t.Errorf("directory holds %q, want only config.json", names)
		}
	})

	t.Run("InvalidCreatesNoDirectory", func(t *testing.T) {
		agentsDir, cfgDir := newAgentsDir(t)
		c := config.Default()
		c.AutoCron = "61 * * * *"
		if err := config.Save(agentsDir, c); !errors.Is(err, bs.ErrInvalid) {
			t.Fatalf("Save = %v, want an error wrapping brainsurgeon.ErrInvalid", err)
		}
		if _, err := os.Lstat(cfgDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Save of an invalid config created %s (Lstat: %v)", cfgDir, err)
		}
	})
}

func TestSaveErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T) (agentsDir string)
		want  string
	}{
		{"NoAgentsDir", func(t *testing.T) string { return "" }, "no agents dir given"},
		{"ParentMissing", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "missing", "agents")
		}, "no such file or directory"},
		{"ConfigDirIsAFile", func(t *testing.T) string {
			agentsDir, cfgDir := newAgentsDir(t)
			if err := os.WriteFile(cfgDir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return agentsDir
		}, "is not a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agentsDir := tt.setup(t)
			err := config.Save(agentsDir, config.Default())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Save = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadUpgradeDoesNotWrite(t *testing.T) {
	agentsDir, cfgDir := newAgentsDir(t)
	if err := os.Mkdir(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfgDir, "config.json")
	old := []byte(`{"enabled": true, "keep_recent": 5, "keep_restore_remote_calls": true, "trigger_rules": []}` + "\n")
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	var log recorder
	c, err := config.Load(context.Background(), agentsDir, &log)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.Default()
	want.Enabled, want.KeepRecent, want.KeepPurgeControlCalls = true, 5, true
	if !sameConfig(c, want) {
		t.Errorf("Load = %+v, want %+v", c, want)
	}
	lines := log.lines()
	for _, line := range []string{
		upgraded("min_value_length", "500"),
		upgraded("last_retention_run_at", "null"),
		"INFO Config upgraded: renamed field keep_restore_remote_calls to keep_purge_control_calls",
		"WARN Config has unknown field trigger_rules; it is ignored and will not be kept when the config is saved",
	} {
		if !slices.Contains(lines, line) {
			t.Errorf("log lacks %q; got %q", line, lines)
		}
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, old) {
		t.Errorf("Load changed the file to %q (%v)", now, err)
	}
	if names := dirNames(t, cfgDir); !slices.Equal(names, []string{"config.json"}) {
		t.Errorf("directory holds %q, want only config.json", names)
	}

	// The caller may Save the upgraded config.
	if err := config.Save(agentsDir, c); err != nil {
		t.Fatal(err)
	}
	var log2 recorder
	if _, err := config.Load(context.Background(), agentsDir, &log2); err != nil {
		t.Fatal(err)
	}
	if lines := log2.lines(); len(lines) != 0 {
		t.Errorf("Load after saving the upgrade logged %q", lines)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range []struct {
		name       string
		content    string // written as config.json unless empty
		setup      func(t *testing.T, cfgDir string)
		ctx        func() context.Context
		want       string
		validation bool // a *ValidationError with the decoded config
	}{
		{name: "Invalid", content: `{"keep_recent": -1, "retention": "10s"}`,
			want:       "keep_recent: must be 0 or more, got -1; retention: Invalid duration '10s'. Use m, h, d, or w",
			validation: true},
		{name: "NotJSON", content: `keep_recent = 3`, want: "config is not valid JSON"},
		{name: "Empty", setup: func(t *testing.T, cfgDir string) {
			if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: "config is empty"},
		{name: "Directory", setup: func(t *testing.T, cfgDir string) {
			if err := os.Mkdir(filepath.Join(cfgDir, "config.json"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: "not a regular file"},
		{name: "TooLarge", setup: func(t *testing.T, cfgDir string) {
			big := `{"x": "` + strings.Repeat("a", config.MaxFileSize) + `"}`
			if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(big), 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: "larger than 1048576 bytes"},
		{name: "Canceled", content: `{}`, ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, want: "context canceled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agentsDir, cfgDir := newAgentsDir(t)
			if err := os.Mkdir(cfgDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tt.content != "" {
				if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.setup != nil {
				tt.setup(t, cfgDir)
			}
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			c, err := config.Load(ctx, agentsDir, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tt.want)
			}
			var ve *config.ValidationError
			if got := errors.As(err, &ve); got != tt.validation {
				t.Errorf("errors.As(*ValidationError) = %v, want %v (err %v)", got, tt.validation, err)
			}
			if tt.validation {
				if !strings.Contains(err.Error(), config.Path(agentsDir)) {
					t.Errorf("error %q does not name the file", err)
				}
				if c.KeepRecent != -1 || c.Retention != "10s" || c.AutoCron != "*/2 * * * *" {
					t.Errorf("Load returned %+v, want the decoded config", c)
				}
			}
		})
	}
}

func TestLoadNoAgentsDir(t *testing.T) {
	if _, err := config.Load(context.Background(), "", nil); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("Load(\"\") = %v, want an error wrapping brainsurgeon.ErrInvalid", err)
	}
}

func TestLoadFileInfo(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	_, info, err := config.LoadFile(ctx, agents, nil)
	if err != nil || info.Exists || info.Path != config.Path(agents) {
		t.Fatalf("no file: info %+v, err %v", info, err)
	}
	if err := os.MkdirAll(filepath.Dir(config.Path(agents)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config.Path(agents), []byte(`{"enable": true, "keep_recnet": 2, "enabled": false, "scan_interval_seconds": 30, "zzz": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, info, err := config.LoadFile(ctx, agents, nil)
	if err != nil || !info.Exists || c.Enabled {
		t.Fatalf("file: info %+v, err %v", info, err)
	}
	if got := strings.Join(info.Unknown, ","); got != "enable,keep_recnet,zzz" {
		t.Fatalf("Unknown = %q", got)
	}
	// An obsolete field of an earlier version is not unknown: it is
	// listed on its own, and the file still loads.
	if got := strings.Join(info.Obsolete, ","); got != "scan_interval_seconds" {
		t.Fatalf("Obsolete = %q", got)
	}
}

func TestNearestField(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"enable", "enabled"},
		{"Enabled", "enabled"},
		{"keep_recnet", "keep_recent"},
		{"idle_second", "idle_seconds"},
		{"zzz", ""},
		{"completely_unrelated_name", ""},
	} {
		if got := config.NearestField(tt.in); got != tt.want {
			t.Errorf("NearestField(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestLoadRefusedConfig checks what Load says about a config it refuses:
// a syntax error names the file, line and column; and neither a syntax
// error nor a failed validation logs an upgrade, since nothing is
// upgraded.
func TestLoadRefusedConfig(t *testing.T) {
	for _, tt := range []struct {
		name, content, want string
	}{
		{"Syntax", "{\n  \"enabled\": thue\n}\n", ":2:15: config is not valid JSON: invalid character 'h' in literal true (expecting 'r')"},
		{"Invalid", `{"enabled": true, "keep_recent": "3"}`, "keep_recent: expected an integer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agentsDir, cfgDir := newAgentsDir(t)
			if err := os.Mkdir(cfgDir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(cfgDir, "config.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			var log recorder
			_, err := config.Load(context.Background(), agentsDir, &log)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want one containing %q", err, tt.want)
			}
			if tt.name == "Syntax" && !strings.HasPrefix(err.Error(), "load config: "+path+":2:15: ") {
				t.Errorf("error %q does not start with the file's path, line and column", err)
			}
			for _, line := range log.lines() {
				if strings.Contains(line, "upgraded") {
					t.Errorf("a refused config logged %q", line)
				}
			}
		})
	}
}
