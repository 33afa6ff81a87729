package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeKeyFile(t *testing.T) {
	root := t.TempDir()
	agents := filepath.Join(root, "agents")
	def := filepath.Join(root, ".brainsurgeon", "api.key")
	other := filepath.Join(root, "other.key")
	if err := os.WriteFile(other, []byte("k2\n\n  k3  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "empty.key")
	if err := os.WriteFile(empty, []byte("\n \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Before the default file exists: no keys, no error.
	if keys, path, err := readServeKeyFile(serveEnv{}, agents); err != nil || keys != nil || path != "" {
		t.Fatalf("no key file: %v %q %v", keys, path, err)
	}
	if err := os.MkdirAll(filepath.Dir(def), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte("0123abcd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file string
		keys       string
		err        string
	}{
		{"default", "", "0123abcd", ""},
		{"env", other, "k2,k3", ""},
		{"env missing", filepath.Join(root, "nope"), "", "BRAINSURGEON_API_KEY_FILE=" + filepath.Join(root, "nope") + ": expected a readable file of API keys, which serve requires when it is named, so that the API is never open by mistake (unset it to use " + def + ","},
		{"empty", empty, "", "expected at least one key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, _, err := readServeKeyFile(serveEnv{KeyFile: tc.file}, agents+"/")
			if strings.Join(keys, ",") != tc.keys || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("keys %q, err %v; want %q, %q", keys, err, tc.keys, tc.err)
			}
		})
	}
}
