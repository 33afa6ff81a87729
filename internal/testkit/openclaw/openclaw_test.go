package openclaw

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://localhost:11434", "http://10.0.0.1:11434", "https://127.0.0.1:1"} {
		if _, err := Config(ConfigOptions{MockURL: u}); err == nil {
			t.Errorf("Config accepted the non-loopback mock URL %s", u)
		}
	}
	b, err := Config(ConfigOptions{MockURL: "http://127.0.0.1:4242", LogFile: "/x/openclaw.log"})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Models struct {
			Providers struct {
				Ollama struct {
					BaseURL string `json:"baseUrl"`
					Models  []struct {
						ID            string `json:"id"`
						ContextWindow int    `json:"contextWindow"`
					} `json:"models"`
				} `json:"ollama"`
			} `json:"providers"`
		} `json:"models"`
		Update  struct{ CheckOnStart bool } `json:"update"`
		Logging struct{ File string }       `json:"logging"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	o := c.Models.Providers.Ollama
	if o.BaseURL != "http://127.0.0.1:4242" || len(o.Models) != 1 || o.Models[0].ID != MockModel ||
		o.Models[0].ContextWindow != 1_000_000 || c.Update.CheckOnStart || c.Logging.File != "/x/openclaw.log" {
		t.Fatalf("config:\n%s", b)
	}
}

func TestLocateNamesTheInstallScript(t *testing.T) {
	t.Setenv("BRAINSURGEON_NODE24", "/nonexistent/node")
	_, err := Locate(V7)
	if err == nil || !strings.Contains(err.Error(), InstallHint) || !strings.Contains(err.Error(), "BRAINSURGEON_NODE24") {
		t.Fatalf("Locate with a missing node: %v", err)
	}
	// a stand-in node that reports 24.21.0
	fake := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 24.21.0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRAINSURGEON_NODE24", fake)
	if _, err := Node24(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRAINSURGEON_OPENCLAW7", t.TempDir())
	if _, err := Locate(V7); err == nil || !strings.Contains(err.Error(), InstallHint) {
		t.Fatalf("Locate with an empty install dir: %v", err)
	}
	if _, err := Locate("2026.1.1"); err == nil {
		t.Fatal("Locate accepted an unknown release")
	}
}
