package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

const demoID = "7f3e2a10-5b6c-4d8e-9f01-23456789abcd"

// demoCopy copies the demo agents dir into a temp dir, sets the
// transcript's modification time one hour back (so the idle gate passes)
// and returns the agents dir and the transcript's path.
func demoCopy(t *testing.T) (agents, path string) {
	t.Helper()
	agents = filepath.Join(t.TempDir(), "agents")
	err := filepath.WalkDir(demoAgents, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(demoAgents, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(agents, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(agents, "main", "sessions", demoID+".jsonl")
	age(t, path)
	return agents, path
}

// age sets a file's modification time one hour back.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// saveConfig writes the agents dir's config: the defaults with fn applied.
func saveConfig(t *testing.T, agents string, fn func(*config.Config)) {
	t.Helper()
	c := config.Default()
	if fn != nil {
		fn(&c)
	}
	if err := config.Save(agents, c); err != nil {
		t.Fatal(err)
	}
}

// noIdle is a config with no idle wait: writes happen at once.
func noIdle(c *config.Config) { c.IdleSeconds = 0 }

// extractAll extracts every value of minLen bytes or more from the
// transcript and returns the details.
func extractAll(t *testing.T, path string, minLen int) []extract.EntryResult {
	t.Helper()
	x := &extract.Extractor{
		Policy: extract.Policy{Enabled: true, KeepRecent: 0, MinValueLength: minLen, Triggers: bs.TriggerTypes(), AgeThreshold: 0, MinSavingTokens: 0},
		Store:  sidetest.Store(""), Side: sidedir.New(sidetest.Store("")),
	}
	res, err := x.Run(context.Background(), bs.SessionRef{Agent: "main", ID: demoID, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Written || res.Entries == 0 {
		t.Fatalf("nothing extracted: %+v", res)
	}
	return res.Details
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hash(b []byte) [32]byte { return sha256.Sum256(b) }

// entryLine returns the raw line of the entry with the given id.
func entryLine(t *testing.T, data []byte, id string) []byte {
	t.Helper()
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		if e := r.Entry(); e.Kind == bs.KindEntry && e.ID == id {
			return bytes.Clone(r.Raw())
		}
	}
	t.Fatalf("no entry %s", id)
	return nil
}

func rawAt(t *testing.T, line []byte, ptr string) []byte {
	t.Helper()
	s, e, ok := jsonedit.Find(line, ptr)
	if !ok {
		t.Fatalf("no value at %s in %.200s", ptr, line)
	}
	return line[s:e]
}

// textOf is what restore prints for a value: a string's text, anything
// else's JSON.
func textOf(t *testing.T, raw []byte) string {
	t.Helper()
	if raw[0] != '"' {
		return string(raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func wantCode(t *testing.T, code, want int, out, errs string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit %d, want %d\nstdout:\n%.2000s\nstderr:\n%s", code, want, out, errs)
	}
}

// TestRestoreCommand restores every extracted entry of the demo, key by
// key: stdout is the original value's text byte for byte, the transcript
// holds the original bytes again, and restoring again is an error.
func TestRestoreCommand(t *testing.T) {
	agents, path := demoCopy(t)
	saveConfig(t, agents, noIdle)
	orig := readFile(t, path)
	details := extractAll(t, path, 1)
	multi := 0
	for _, d := range details {
		origLine := entryLine(t, orig, d.ID)
		for _, k := range d.Keys {
			code, out, errs := run(t, "restore", "agent:main:main", d.ID, "--keys", k, "--agents-dir", agents)
			wantCode(t, code, 0, out, errs)
			if want := textOf(t, rawAt(t, origLine, k)); out != want {
				t.Fatalf("restore %s %s: stdout differs from the original text\n got %.300q\nwant %.300q", d.ID, k, out, want)
			}
			if !strings.Contains(errs, "restored "+k+" of entry "+d.ID) || !strings.Contains(errs, "written back now") || strings.Count(errs, "\n") != 1 {
				t.Fatalf("status line: %q", errs)
			}
			cur := entryLine(t, readFile(t, path), d.ID)
			if !bytes.Equal(rawAt(t, cur, k), rawAt(t, origLine, k)) {
				t.Fatalf("restore %s %s: transcript value differs from the original", d.ID, k)
			}
		}
		if len(d.Keys) > 1 {
			multi++
		}
		// Again: the same content, a note, exit 0, nothing written.
		before := readFile(t, path)
		code, out, errs := run(t, "restore", "agent:main:main", d.ID, "--agents-dir", agents)
		wantCode(t, code, 0, out, errs)
		if !strings.Contains(errs, "already restored") || out == "" {
			t.Fatalf("second restore of %s: stdout %.200q, stderr %s", d.ID, out, errs)
		}
		if !bytes.Equal(readFile(t, path), before) {
			t.Fatalf("second restore of %s wrote to the transcript", d.ID)
		}
	}
	if multi == 0 {
		t.Fatal("no entry with several values in the demo")
	}
}

// TestRestoreMultiKeyAndJSON: several keys print under headers; --json
// prints the full Result.
func TestRestoreMultiKeyAndJSON(t *testing.T) {
	agents, path := demoCopy(t)
	saveConfig(t, agents, noIdle)
	orig := readFile(t, path)
	details := extractAll(t, path, 1)
	var multi, single extract.EntryResult
	for _, d := range details {
		if len(d.Keys) > 1 && multi.ID == "" {
			multi = d
		}
		if len(d.Keys) == 1 && single.ID == "" {
			single = d
		}
	}
	code, out, errs := run(t, "restore", demoID, multi.ID, "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	origLine := entryLine(t, orig, multi.ID)
	for _, k := range multi.Keys {
		text := textOf(t, rawAt(t, origLine, k))
		if want := "== " + k + " (" + itoa(len(text)) + " bytes) ==\n" + text + "\n"; !strings.Contains(out, want) {
			t.Fatalf("stdout lacks %.200q:\n%.2000s", want, out)
		}
	}
	if !strings.Contains(errs, "restored "+itoa(len(multi.Keys))+" values of entry "+multi.ID) {
		t.Fatalf("status: %q", errs)
	}

	code, out, errs = run(t, "restore", "--json", "main/"+demoID, single.ID, "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	var res restore.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	k := single.Keys[0]
	if !res.Restored || res.EntryID != single.ID || len(res.KeysRestored) != 1 || res.KeysRestored[0] != k ||
		res.SizesBytes[k] != single.Sizes[0] || !res.Applied || res.Queued || res.Content[k] != textOf(t, rawAt(t, entryLine(t, orig, single.ID), k)) {
		t.Fatalf("result %+v", res)
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal([]byte(out), &raw)
	for _, f := range []string{"restored", "entry_id", "keys_restored", "sizes_bytes", "applied", "queued", "redacted", "content"} {
		if _, ok := raw[f]; !ok {
			t.Errorf("JSON lacks %q", f)
		}
	}
	if errs != "" {
		t.Errorf("--json wrote to stderr: %q", errs)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRestoreQueuedThenPrune: a busy session queues the write-back, the
// content is printed anyway, and the next prune applies it.
func TestRestoreQueuedThenPrune(t *testing.T) {
	agents, path := demoCopy(t)
	saveConfig(t, agents, nil) // idle_seconds 300
	details := extractAll(t, path, 200)
	d := details[0]
	// A host write makes the session busy (our own rewrite keeps the mtime).
	if now := time.Now(); os.Chtimes(path, now, now) != nil {
		t.Fatal("touch transcript")
	}
	before := readFile(t, path)
	code, out, errs := run(t, "restore", "agent:main:main", d.ID, "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if out == "" || !strings.Contains(errs, "queued: written back when the session is idle") {
		t.Fatalf("stdout %d bytes, stderr %q", len(out), errs)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("a busy session was written")
	}
	// Queued once already: a second request gets the suggestion.
	_, _, errs = run(t, "restore", "agent:main:main", d.ID, "--agents-dir", agents)
	if !strings.Contains(errs, "previously restored at") || !strings.Contains(errs, "_extractable: false") {
		t.Fatalf("no re-restore suggestion: %q", errs)
	}
	age(t, path)
	code, out, errs = run(t, "prune", "--force", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(errs, "applied 2 pending restore write-backs\n") {
		t.Fatalf("prune stderr: %q", errs)
	}
	if line := entryLine(t, readFile(t, path), d.ID); bytes.Contains(line, []byte(extract.Placeholder(d.ID))) || !bytes.Contains(line, []byte(`"_restored"`)) {
		t.Fatalf("write-back not applied: %.300s", line)
	}
	// Nothing left to apply: prune says nothing about it.
	age(t, path)
	_, _, errs = run(t, "prune", "--force", "--agents-dir", agents)
	if strings.Contains(errs, "pending") {
		t.Fatalf("prune stderr: %q", errs)
	}
}

// TestRestoreAllPristine: --all puts every value back; --pristine gives
// back the original file byte for byte, after restores and _extractable.
func TestRestoreAllPristine(t *testing.T) {
	agents, path := demoCopy(t)
	saveConfig(t, agents, noIdle)
	orig := readFile(t, path)
	details := extractAll(t, path, 1)
	if code, out, errs := run(t, "restore", "main:main", details[0].ID, "--agents-dir", agents); code != 0 {
		wantCode(t, code, 0, out, errs)
	}
	if code, out, errs := run(t, "extractable", "main:main", details[1].ID, "false", "--agents-dir", agents); code != 0 {
		wantCode(t, code, 0, out, errs)
	}
	code, out, errs := run(t, "restore", "main:main", "--all", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	var all restore.AllResult
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	values := 0
	for _, d := range details[1:] {
		values += len(d.Keys)
	}
	if all.Values != values || all.Entries != len(details)-1 || !all.Applied || all.Pristine || len(all.Lost) != 0 {
		t.Fatalf("restore --all: %+v (want %d values)", all, values)
	}
	if bytes.Contains(readFile(t, path), []byte(extract.PlaceholderPrefix)) {
		t.Fatal("placeholders remain after --all")
	}
	if hash(readFile(t, path)) == hash(orig) {
		t.Fatal("--all without --pristine should keep the _restored marks")
	}
	code, out, errs = run(t, "restore", "--all", "--pristine", "main:main", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "Pristine    yes") {
		t.Fatalf("summary:\n%s", out)
	}
	if hash(readFile(t, path)) != hash(orig) {
		t.Fatal("--all --pristine: the transcript is not byte-identical to the original")
	}
}

func TestExtractableCommand(t *testing.T) {
	agents, path := demoCopy(t)
	saveConfig(t, agents, noIdle)
	details := extractAll(t, path, 200)
	id := details[0].ID
	code, out, errs := run(t, "extractable", "agent:main:main", id, "false", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "_extractable set to false (was absent); written now") {
		t.Fatalf("stdout %q", out)
	}
	line := entryLine(t, readFile(t, path), id)
	if string(rawAt(t, line, "/_extractable")) != "false" {
		t.Fatalf("member not set: %.300s", line)
	}
	code, out, errs = run(t, "extractable", "--json", "agent:main:main", id, "12", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	var res struct {
		restore.SetResult
		Value    any `json:"value"`
		Previous any `json:"previous"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.EntryID != id || res.Value != 12.0 || res.Previous != false || !res.Changed || !res.Applied {
		t.Fatalf("result %+v (%v)\n%s", res, err, out)
	}
	if string(rawAt(t, entryLine(t, readFile(t, path), id), "/_extractable")) != "12" {
		t.Fatal("member not 12")
	}
	code, out, errs = run(t, "extractable", "agent:main:main", id, "12", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "already 12") {
		t.Fatalf("stdout %q", out)
	}
}

// TestVerifyCommand: clean → 0; a deleted side file → 1 with the entry
// listed; a stray side file is an orphan, not a problem.
func TestVerifyCommand(t *testing.T) {
	agents, path := demoCopy(t)
	details := extractAll(t, path, 200)
	code, out, errs := run(t, "verify", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains("\n"+out, "\nOK: 1 session, "+itoa(len(details))+" placeholders, "+itoa(len(details))+" verified, 0 problems") {
		t.Fatalf("stdout %q", out)
	}
	dir := sidetest.Dir(path, demoID)
	stray := &extract.Record{EntryID: "stray", Values: []extract.StoredValue{{Path: "/x", Raw: []byte(`"x"`), Size: 3}}}
	if err := sidetest.WriteRecord(dir, stray); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "verify", "agent:main:main", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "Orphans") || strings.Contains(out, "stray") || !strings.Contains(out, "1 orphan (3 bytes)") || strings.Contains(out, "retention") {
		t.Fatalf("stdout %q", out)
	}
	code, out, errs = run(t, "verify", "agent:main:main", "--verbose", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "stray") {
		t.Fatalf("--verbose: stdout %q", out)
	}
	gone := details[1]
	if err := sidetest.RemoveRecord(dir, gone.ID); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "verify", "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(out, "main/"+demoID) || !strings.Contains(out, gone.ID) || !strings.Contains(out, gone.Keys[0]) ||
		!strings.Contains(out, restore.ProblemMissingFile) || !strings.Contains(errs, "1 placeholder has no intact value") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out, errs)
	}
	code, out, _ = run(t, "verify", "--json", "--agents-dir", agents)
	var sum struct {
		OK       bool `json:"ok"`
		Problems int  `json:"problems"`
		Orphans  int  `json:"orphans"`
		Reports  []restore.VerifyReport
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != 1 || sum.OK || sum.Problems != 1 || sum.Orphans != 1 || len(sum.Reports) != 1 ||
		sum.Reports[0].Problems[0].EntryID != gone.ID {
		t.Fatalf("exit %d, %+v (%v)", code, sum, err)
	}
}

// TestRestoreBadInput: unknown session, entry or key → 1 with what exists;
// wrong command lines → 2.
func TestRestoreBadInput(t *testing.T) {
	agents, path := demoCopy(t)
	saveConfig(t, agents, noIdle)
	details := extractAll(t, path, 200)
	id := details[0].ID
	for _, tt := range []struct {
		name string
		args []string
		code int
		err  []string
	}{
		{"UnknownSession", []string{"restore", "nope", id}, 1, []string{"nope", demoID}},
		{"UnknownEntry", []string{"restore", "main:main", "nosuch99"}, 1, []string{"nosuch99", "not found", "ids look like"}},
		{"UnknownKey", []string{"restore", "main:main", id, "--keys", "nokey"}, 1, []string{"nokey", details[0].Keys[0]}},
		{"BadEntryID", []string{"restore", "main:main", "../etc"}, 1, []string{"not allowed"}},
		{"NeverExtracted", []string{"restore", "main:main", "f2a74de4"}, 1, []string{"nothing to restore"}},
		{"NoArgs", []string{"restore"}, 2, []string{"session and an entry id", "Try: brainsurgeon restore --help"}},
		{"NoEntry", []string{"restore", "main:main"}, 2, []string{"got 1 argument"}},
		{"TooMany", []string{"restore", "main:main", id, "x"}, 2, []string{"got 3 arguments"}},
		{"PristineAlone", []string{"restore", "main:main", id, "--pristine"}, 2, []string{"--pristine goes with --all"}},
		{"AllWithKeys", []string{"restore", "main:main", "--all", "--keys", "text"}, 2, []string{"--keys"}},
		{"AllWithEntry", []string{"restore", "main:main", id, "--all"}, 2, []string{"one session"}},
		{"BadFlag", []string{"restore", "main:main", id, "--nope"}, 2, []string{"nope"}},
		{"ExtractableNoArgs", []string{"extractable", "main:main", id}, 2, []string{"true, false or a number"}},
		{"ExtractableBadValue", []string{"extractable", "main:main", id, "maybe"}, 2, []string{"maybe"}},
		{"ExtractableUnknownEntry", []string{"extractable", "main:main", "nosuch99", "false"}, 1, []string{"nosuch99", "not found"}},
		{"VerifyUnknownSession", []string{"verify", "nope"}, 1, []string{"nope", demoID}},
		{"VerifyTooMany", []string{"verify", "a", "b"}, 2, []string{"at most one session"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, append(tt.args, "--agents-dir", agents)...)
			wantCode(t, code, tt.code, out, errs)
			for _, w := range tt.err {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
	for _, cmd := range []string{"restore", "extractable", "verify"} {
		code, out, errs := run(t, "help", cmd)
		wantCode(t, code, 0, out, errs)
		if !strings.Contains(out, "Usage: brainsurgeon "+cmd) || !strings.Contains(out, "Examples:") {
			t.Errorf("help %s:\n%s", cmd, out)
		}
	}
}

// TestPruneCommand runs prune on a copy of the demo agents dir.
func TestPruneCommand(t *testing.T) {
	agents, path := demoCopy(t)
	orig := readFile(t, path)
	side := filepath.Join(filepath.Dir(path), "extracted")

	// Disabled by default: prune refuses without --force.
	code, out, errs := run(t, "prune", "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(errs, "smart pruning is disabled") || !strings.Contains(errs, "--force") {
		t.Fatalf("stderr %q", errs)
	}

	// A dry run applies the same gates: disabled, it refuses the same way.
	code, out, errs = run(t, "prune", "--dry-run", "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(errs, "smart pruning is disabled") || !strings.Contains(errs, "--dry-run --force") {
		t.Fatalf("stderr %q", errs)
	}

	// A session that does not exist is named before any gate, dry run or not.
	for _, args := range [][]string{{"--dry-run"}, {}} {
		code, out, errs = run(t, append([]string{"prune", "--session", "main/does-not-exist", "--agents-dir", agents}, args...)...)
		wantCode(t, code, 1, out, errs)
		if !strings.Contains(errs, `no session "main/does-not-exist"`) || strings.Contains(errs, "smart pruning is disabled") {
			t.Fatalf("prune --session main/does-not-exist %q: stderr %q", args, errs)
		}
	}
	// A session that exists still meets the disabled gate.
	code, out, errs = run(t, "prune", "--session", "agent:main:main", "--dry-run", "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(errs, "smart pruning is disabled") {
		t.Fatalf("prune --session agent:main:main --dry-run: stderr %q", errs)
	}

	// --dry-run --force reports and writes nothing.
	st0, _ := os.Stat(path)
	code, out, errs = run(t, "prune", "--dry-run", "--force", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "would extract") || !strings.Contains(out, "would save") {
		t.Fatalf("stdout %q", out)
	}
	if st1, _ := os.Stat(path); !bytes.Equal(readFile(t, path), orig) || !st1.ModTime().Equal(st0.ModTime()) {
		t.Fatal("--dry-run changed the transcript")
	}
	if _, err := os.Stat(side); err == nil {
		t.Fatal("--dry-run wrote side files")
	}

	// --force extracts.
	code, out, errs = run(t, "prune", "--force", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	var rep struct {
		Sessions []struct {
			Session string          `json:"session"`
			Status  string          `json:"status"`
			Result  *extract.Result `json:"result"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Sessions) != 1 || rep.Sessions[0].Status != "extracted" || rep.Sessions[0].Result.Entries == 0 {
		t.Fatalf("%v: %s", err, out)
	}
	reps := rep.Sessions
	after := readFile(t, path)
	if len(after) >= len(orig) || !bytes.Contains(after, []byte(extract.PlaceholderPrefix)) {
		t.Fatal("prune --force did not extract")
	}
	files, _ := os.ReadDir(filepath.Join(side, demoID))
	infos, err := sidedir.New(sidedir.Fixed(filepath.Join(side, demoID))).List(context.Background(), bs.SessionRef{})
	if len(files) != 1 || err != nil || len(infos) != reps[0].Result.Entries {
		t.Fatalf("%d side files (want one pack), %d records, %d entries extracted (%v)", len(files), len(infos), reps[0].Result.Entries, err)
	}
	if code, out, errs := run(t, "verify", "--agents-dir", agents); code != 0 {
		wantCode(t, code, 0, out, errs)
	}

	// A second pass has nothing left to do and writes nothing.
	age(t, path)
	st0, _ = os.Stat(path)
	code, out, errs = run(t, "prune", "--force", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "unchanged") {
		t.Fatalf("stdout %q", out)
	}
	if st1, _ := os.Stat(path); !bytes.Equal(readFile(t, path), after) || !st1.ModTime().Equal(st0.ModTime()) {
		t.Fatal("the second prune wrote the transcript")
	}
}

// TestRestoreMissingSideFile: a side file removed (by retention, say) gives
// the seeds' "unavailable" text and a warning, and exit 1 (a requested
// value did not come back); a corrupt one is a problem (exit 1) too, and
// the placeholder stays.
func TestRestoreMissingSideFile(t *testing.T) {
	agents, path := demoCopy(t)
	saveConfig(t, agents, noIdle)
	details := extractAll(t, path, 1)
	if len(details) < 2 {
		t.Fatalf("want at least two extracted entries, got %d", len(details))
	}
	dir := sidetest.Dir(path, "7f3e2a10-5b6c-4d8e-9f01-23456789abcd")
	if err := sidetest.RemoveRecord(dir, details[0].ID); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)
	code, out, errs := run(t, "restore", "agent:main:main", details[0].ID, "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(out, restore.MissingText) || !strings.Contains(strings.ToLower(errs), "missing") {
		t.Fatalf("missing side file: stdout %q stderr %q", out, errs)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("a restore without its side file changed the transcript")
	}

	// Corrupt the other entry's side file: no stored hash matches. (With
	// only some values corrupt, the others are restored: exit 0 and a
	// warning.)
	rec, _, err := sidetest.ReadRecord(dir, details[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rec.Values {
		rec.Values[i].SHA256 = strings.Repeat("0", 64)
	}
	if err := sidetest.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "restore", "agent:main:main", details[1].ID, "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(out, "corrupt") || !bytes.Equal(readFile(t, path), before) {
		t.Fatalf("corrupt side file: stdout %q stderr %q", out, errs)
	}
}
