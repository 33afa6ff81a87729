package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidefault"
)

// TestSideStoreUnavailable runs commands while the side store cannot be
// reached: each exits 1 with the error's message (the cause included),
// --json gives the kind "unavailable", and no transcript changes.
func TestSideStoreUnavailable(t *testing.T) {
	agents, path := demoCopy(t)
	var side *sidefault.Store
	down := false
	m := func(out, errs *bytes.Buffer) *Main {
		return &Main{Stdout: out, Stderr: errs, wrapSide: func(s bs.SideStore) bs.SideStore {
			side = sidefault.New(s)
			if down {
				side.Down()
			}
			return side
		}}
	}
	runM := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := m(&out, &errs).Run(context.Background(), args)
		return code, out.String(), errs.String()
	}
	// One value extracted while the store is up, to restore while it is down.
	code, out, errs := runM("prune", "--force", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	id := regexp.MustCompile(`\[\[extracted-([^\]]+)\]\]`).FindSubmatch(readFile(t, path))
	if id == nil {
		t.Fatal("prune --force extracted nothing")
	}
	orig := readFile(t, path)
	down = true
	for _, tt := range []struct {
		name string
		args []string
		out  []string // in stdout
	}{
		{"prune", []string{"prune", "--force", "--agents-dir", agents}, []string{"error"}},
		{"restore", []string{"restore", "main/" + demoID, string(id[1]), "--agents-dir", agents}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runM(tt.args...)
			wantCode(t, code, 1, out, errs)
			if !strings.HasPrefix(errs, "Error: ") || !strings.Contains(errs, "side store unavailable") || !strings.Contains(errs, sidefault.Cause) {
				t.Errorf("stderr %q: want the error's message", errs)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			code, out, errs = runM(append(tt.args, "--json")...)
			wantCode(t, code, 1, out, errs)
			var doc struct {
				Error, Kind string
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Kind != "unavailable" || !strings.Contains(doc.Error, sidefault.Cause) {
				t.Errorf("--json: %v, kind %q, error %q; want kind unavailable and the cause:\n%s", err, doc.Kind, doc.Error, out)
			}
			if !bytes.Equal(readFile(t, path), orig) {
				t.Fatal("the transcript changed")
			}
		})
	}
}
