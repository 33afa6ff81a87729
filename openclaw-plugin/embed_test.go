package openclawplugin

import (
	"encoding/json"
	"io/fs"
	"os"
	"slices"
	"testing"
)

// TestFilesAreWhatNpmPacks checks that the embedded files are package.json
// plus the package's "files" list, byte for byte the files on disk, and that
// Version reads the version field.
func TestFilesAreWhatNpmPacks(t *testing.T) {
	raw, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version string   `json:"version"`
		Files   []string `json:"files"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("package.json: %v", err)
	}
	want := append([]string{"package.json"}, pkg.Files...)
	slices.Sort(want)
	var got []string
	err = fs.WalkDir(Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			got = append(got, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("embedded files %v, expected package.json plus package.json's files: %v", got, want)
	}
	for _, name := range got {
		emb, err := fs.ReadFile(Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(emb) != string(disk) {
			t.Errorf("%s: embedded copy differs from the file on disk", name)
		}
	}
	if Version() == "" || Version() != pkg.Version {
		t.Errorf("Version() = %q, expected package.json's version %q", Version(), pkg.Version)
	}
}
