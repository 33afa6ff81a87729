package oracle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

const (
	// MIT-licensed pi-mono fixture: a v1 file that pi migrates to v3 on open.
	fixtureMIT = "corpus/openclaw/badlogic__pi-mono/session.jsonl"
	// An OpenClaw v3 session (no migration; stable ids).
	fixtureV3 = "corpus/openclaw/sirdeuce__nucbox-backup/.openclaw/agents/main/sessions/1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl"
)

// sharedFile returns a file of the shared directory; t is skipped when the directory is missing (see Shared).
func sharedFile(t *testing.T, rel string) string {
	t.Helper()
	shared := Shared(t)
	p := filepath.Join(shared, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture missing: %v", err)
	}
	return p
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func copyTo(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func wantOracle(t *testing.T, got string) {
	t.Helper()
	if want := PiPackage + "@" + PiVersion; got != want {
		t.Errorf("oracle = %q, want %q", got, want)
	}
}

func checkSummary(t *testing.T, s PiSummary) {
	t.Helper()
	wantOracle(t, s.Oracle)
	if s.EntryCount <= 0 {
		t.Errorf("%s: entryCount = %d", s.File, s.EntryCount)
	}
	total := 0
	for _, n := range s.EntryTypes {
		total += n
	}
	if total != s.EntryCount {
		t.Errorf("%s: entryTypes add up to %d, entryCount %d", s.File, total, s.EntryCount)
	}
	if s.Leaf() == "" {
		t.Errorf("%s: empty leafId", s.File)
	}
	if s.HeaderVersion == nil || *s.HeaderVersion != 3 {
		t.Errorf("%s: headerVersion = %v, want 3 after open", s.File, s.HeaderVersion)
	}
	if s.SessionID == "" {
		t.Errorf("%s: empty sessionId", s.File)
	}
	if s.ContextMessageCount <= 0 || len(s.Messages) != s.ContextMessageCount {
		t.Errorf("%s: contextMessageCount %d, %d message descriptors", s.File, s.ContextMessageCount, len(s.Messages))
	}
	if n, ok := s.LLMCount(); !ok || n <= 0 {
		t.Errorf("%s: llmMessageCount = %s", s.File, s.LLMMessageCount)
	}
	if s.ContextBytes <= 0 || len(s.ContextSha) != 16 {
		t.Errorf("%s: contextBytes %d, contextSha %q", s.File, s.ContextBytes, s.ContextSha)
	}
	for i, m := range s.Messages {
		if m.I != i || m.Role == "" || m.Bytes <= 0 || len(m.Sha) != 16 {
			t.Errorf("%s: message %d descriptor %+v", s.File, i, m)
			break
		}
		if m.Role == "toolResult" && m.ToolCallID == "" {
			t.Errorf("%s: message %d: toolResult without toolCallId", s.File, i)
		}
	}
}

func TestSummaryFixtures(t *testing.T) {
	Require(t)
	ctx := testCtx(t)
	mit, v3 := sharedFile(t, fixtureMIT), sharedFile(t, fixtureV3)

	both, err := Summary(ctx, mit, v3)
	if err != nil {
		t.Fatal(err)
	}
	if len(both) != 2 || both[0].File != mit || both[1].File != v3 {
		t.Fatalf("got %d summaries", len(both))
	}
	for _, s := range both {
		checkSummary(t, s)
	}
	if !both[0].MigratedOnOpen {
		t.Errorf("MIT fixture (v1): migratedOnOpen = false, want true")
	}
	s := both[1]
	if s.MigratedOnOpen {
		t.Errorf("v3 fixture: migratedOnOpen = true")
	}
	if s.Leaf() != "ac0f4fa1" || s.SessionID != "1d9efd24-3d45-430b-a703-e713c1679ce1" || s.EntryCount != 175 {
		t.Errorf("v3 fixture: leaf %q session %q entries %d", s.Leaf(), s.SessionID, s.EntryCount)
	}
	if s.EntryTypes["message"] == 0 {
		t.Errorf("v3 fixture: no message entries: %v", s.EntryTypes)
	}

	// One file alone must give the same summary as among others.
	one, err := Summary(ctx, v3)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || !reflect.DeepEqual(one[0], both[1]) {
		t.Errorf("single-file summary differs from batched one:\n%.2000v\n%.2000v", fmt.Sprintf("%+v", one), fmt.Sprintf("%+v", both[1]))
	}
	// The MIT file gets fresh random ids on every migration, but its context is id-free and stable.
	again, err := Summary(ctx, mit)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].ContextSha != both[0].ContextSha || again[0].ContextBytes != both[0].ContextBytes {
		t.Errorf("MIT fixture context not stable across opens: %s/%d vs %s/%d",
			again[0].ContextSha, again[0].ContextBytes, both[0].ContextSha, both[0].ContextBytes)
	}
}

// TestSummaryCorpus runs every OpenClaw JSONL transcript in the shared corpus through one batch: the decoder
// must cope with all of them, in order.
func TestSummaryCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every corpus transcript in the pi oracle; skipped with -short")
	}
	Require(t)
	shared := Shared(t)
	var files []string
	err := filepath.WalkDir(filepath.Join(shared, "corpus", "openclaw"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("only %d JSONL files in the corpus", len(files))
	}
	sums, err := Summary(testCtx(t), files...)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sums {
		if s.File != files[i] {
			t.Fatalf("summary %d for %s, want %s", i, s.File, files[i])
		}
		checkSummary(t, s)
	}
}

func TestSummaryDoesNotModifyInput(t *testing.T) {
	Require(t)
	f := copyTo(t, sharedFile(t, fixtureMIT)) // pi rewrites v1 files on open; the script must use a copy
	before, _ := os.ReadFile(f)
	s, err := Summary(testCtx(t), f)
	if err != nil {
		t.Fatal(err)
	}
	if !s[0].MigratedOnOpen {
		t.Fatal("expected pi to migrate (its copy of) the v1 file")
	}
	after, _ := os.ReadFile(f)
	if !bytes.Equal(before, after) {
		t.Fatal("input file changed")
	}
}

func TestSummaryMissingFile(t *testing.T) {
	Require(t)
	v3 := sharedFile(t, fixtureV3)
	_, err := Summary(testCtx(t), v3, filepath.Join(t.TempDir(), "nope.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Fatalf("err = %v", err)
	}
}

func TestCompareSelf(t *testing.T) {
	Require(t)
	ctx := testCtx(t)
	for _, rel := range []string{fixtureV3, fixtureMIT} {
		f := sharedFile(t, rel)
		c, err := Compare(ctx, f, f)
		if err != nil {
			t.Fatal(err)
		}
		wantOracle(t, c.Oracle)
		if c.DifferingMessages != 0 || len(c.Diffs) != 0 {
			t.Errorf("%s vs itself: %d differing messages: %+v", rel, c.DifferingMessages, c.Diffs)
		}
		if c.EntryCount[0] != c.EntryCount[1] || c.EntryCount[0] == 0 ||
			c.ContextMessageCount[0] != c.ContextMessageCount[1] || c.ContextBytes[0] != c.ContextBytes[1] {
			t.Errorf("%s vs itself: %+v", rel, c)
		}
		if rel == fixtureV3 { // stable ids only without migration
			if !c.SameLeaf || len(c.MissingIDsInAfter) != 0 || len(c.NewIDsInAfter) != 0 || c.LeafID[0] == nil || *c.LeafID[0] != "ac0f4fa1" {
				t.Errorf("v3 vs itself: sameLeaf %v leaf %v missing %d new %d", c.SameLeaf, c.LeafID, len(c.MissingIDsInAfter), len(c.NewIDsInAfter))
			}
		}
	}
}

// TestCompareDetectsEdit edits the text of one context message (the leaf) byte-exactly and expects the oracle to
// report exactly that message.
func TestCompareDetectsEdit(t *testing.T) {
	Require(t)
	ctx := testCtx(t)
	orig := sharedFile(t, fixtureV3)
	b, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(b, []byte("\n"))
	edited := false
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"id":"ac0f4fa1"`)) {
			j := bytes.Index(l, []byte(`"text":"`))
			if j < 0 {
				t.Fatal("leaf entry has no text block")
			}
			j += len(`"text":"`)
			lines[i] = append(append(append([]byte{}, l[:j]...), "EDITED "...), l[j:]...)
			edited = true
			break
		}
	}
	if !edited {
		t.Fatal("leaf entry not found")
	}
	after := filepath.Join(t.TempDir(), "after.jsonl")
	if err := os.WriteFile(after, bytes.Join(lines, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Compare(ctx, orig, after)
	if err != nil {
		t.Fatal(err)
	}
	last := c.ContextMessageCount[0] - 1
	if c.DifferingMessages != 1 || len(c.Diffs) != 1 || c.Diffs[0].I != last {
		t.Fatalf("differing %d, diffs %+v, want only message %d", c.DifferingMessages, c.Diffs, last)
	}
	d := c.Diffs[0]
	if d.Before == nil || d.After == nil || d.Before.Sha == d.After.Sha || d.After.Bytes != d.Before.Bytes+len("EDITED ") ||
		d.Before.Role != "assistant" || !reflect.DeepEqual(d.Before.Blocks, []string{"text"}) {
		t.Errorf("diff = before %+v after %+v", d.Before, d.After)
	}
	if !c.SameLeaf || len(c.MissingIDsInAfter) != 0 || len(c.NewIDsInAfter) != 0 || c.EntryCount[0] != c.EntryCount[1] {
		t.Errorf("ids changed: %+v", c)
	}

	ctxMsgs, err := Context(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	wantOracle(t, ctxMsgs.Oracle)
	if len(ctxMsgs.Messages) != c.ContextMessageCount[1] || !bytes.Contains(ctxMsgs.Messages[last], []byte("EDITED It seems")) {
		t.Fatalf("context: %d messages, last %.200s", len(ctxMsgs.Messages), ctxMsgs.Messages[len(ctxMsgs.Messages)-1])
	}
	if got := len(ctxMsgs.Messages[last]); got != d.After.Bytes { // compacted == JSON.stringify(message)
		t.Errorf("context message %d is %d bytes, oracle says %d", last, got, d.After.Bytes)
	}
}

// fakeTB records Fatalf/Skipf instead of stopping the goroutine.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Name() string                   { return "TestRequireSkipsOrFails/fake" }
func (f *fakeTB) Fatalf(format string, a ...any) { f.fatal = fmt.Sprintf(format, a...) }
func (f *fakeTB) Skipf(format string, a ...any)  { f.skip = fmt.Sprintf(format, a...) }

func TestAvailableNamesWhatIsMissing(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PI_ORACLE_MODULES", empty)
	t.Setenv("PI_ORACLE_NODE", "/nonexistent/node")
	t.Setenv("BRAINSURGEON_SHARED", filepath.Join(empty, "no-shared"))
	err := Available()
	if err == nil {
		t.Fatal("Available() = nil")
	}
	for _, want := range []string{PiPackage + "@" + PiVersion, empty, "/nonexistent/node", "install-oracle.sh", "npm install"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
}

func TestAvailableWrongVersion(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, filepath.FromSlash(PiPackage))
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"version":"0.1.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_ORACLE_MODULES", dir)
	if err := Available(); err == nil || !strings.Contains(err.Error(), `"0.1.0"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestRequireSkipsOrFails(t *testing.T) {
	t.Setenv("PI_ORACLE_MODULES", t.TempDir()) // make the oracle unavailable
	skips.Lock()
	saved := skips.oracle
	skips.oracle = nil
	skips.Unlock()
	t.Cleanup(func() {
		skips.Lock()
		skips.oracle = saved
		skips.Unlock()
	})
	for _, tc := range []struct {
		ci, req string
		fail    bool
	}{
		{"", "", false},
		{"false", "", false},
		{"true", "", true},
		{"1", "", true},
		{"", "1", true},
		{"false", "1", true},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("BRAINSURGEON_REQUIRE_ORACLE", tc.req)
		f := &fakeTB{}
		Require(f)
		if tc.fail && (f.fatal == "" || f.skip != "") || !tc.fail && (f.skip == "" || f.fatal != "") {
			t.Errorf("CI=%q REQUIRE=%q: fatal %q skip %q", tc.ci, tc.req, f.fatal, f.skip)
		}
		if msg := f.fatal + f.skip; !strings.Contains(msg, "install-oracle.sh") {
			t.Errorf("no install hint in %q", msg)
		}
	}
	// The skips (not the failures) are named in the closing line, once.
	line := SkipLine()
	if !strings.Contains(line, "skipped the oracle checks of 1 test (TestRequireSkipsOrFails)") || !strings.Contains(line, "install-oracle.sh") {
		t.Errorf("SkipLine() = %q", line)
	}
	t.Setenv("CI", "")
	t.Setenv("BRAINSURGEON_REQUIRE_ORACLE", "")
	if f := (&fakeTB{}); Optional(f) || f.fatal != "" {
		t.Errorf("Optional without the oracle: fatal %q", f.fatal)
	}
	t.Setenv("CI", "true")
	if f := (&fakeTB{}); Optional(f) || f.fatal == "" {
		t.Error("Optional without the oracle under CI did not fail")
	}
}

// TestSharedSkipsOrFails: a missing shared directory skips a test that needs it (Shared) or lets it go on with
// the self-made corpus (SharedOptional), and fails both when the environment requires everything; the closing
// line names each kind once.
func TestSharedSkipsOrFails(t *testing.T) {
	t.Setenv("BRAINSURGEON_SHARED", filepath.Join(t.TempDir(), "absent"))
	skips.Lock()
	savedShared, savedReduced := skips.shared, skips.reduced
	skips.shared, skips.reduced = nil, nil
	skips.Unlock()
	t.Cleanup(func() {
		skips.Lock()
		skips.shared, skips.reduced = savedShared, savedReduced
		skips.Unlock()
	})
	for _, tc := range []struct {
		ci, req string
		fail    bool
	}{
		{"", "", false},
		{"0", "", false},
		{"true", "", true},
		{"", "1", true},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("BRAINSURGEON_REQUIRE_ORACLE", tc.req)
		f := &fakeTB{}
		if dir := Shared(f); dir != "" {
			t.Errorf("Shared() = %q", dir)
		}
		if tc.fail && (f.fatal == "" || f.skip != "") || !tc.fail && (f.skip == "" || f.fatal != "") {
			t.Errorf("Shared: CI=%q REQUIRE=%q: fatal %q skip %q", tc.ci, tc.req, f.fatal, f.skip)
		}
		f = &fakeTB{}
		if dir, ok := SharedOptional(f); ok || dir != "" {
			t.Errorf("SharedOptional() = %q, %v", dir, ok)
		}
		if tc.fail != (f.fatal != "") || f.skip != "" {
			t.Errorf("SharedOptional: CI=%q REQUIRE=%q: fatal %q skip %q", tc.ci, tc.req, f.fatal, f.skip)
		}
	}
	line := SkipLine()
	for _, want := range []string{"absent not found", "skipped 1 test that needs real files (TestRequireSkipsOrFails)",
		"ran 1 corpus test on the self-made corpus only (TestRequireSkipsOrFails)", "BRAINSURGEON_REQUIRE_ORACLE=1"} {
		if !strings.Contains(line, want) {
			t.Errorf("SkipLine() = %q, want it to say %q", line, want)
		}
	}
	if strings.Count(line, "\n") != 0 {
		t.Errorf("SkipLine() is more than one line: %q", line)
	}
}

// TestAppendMode reads the O_APPEND flag from /proc/self/fdinfo.
func TestAppendMode(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/<pid>/fdinfo is Linux's")
	}
	for _, flag := range []int{0, os.O_APPEND} {
		f, err := os.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_CREATE|os.O_WRONLY|flag, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		got := appendMode(fmt.Sprintf("/proc/self/fdinfo/%d", f.Fd()))
		f.Close()
		if got != (flag != 0) {
			t.Errorf("appendMode with flag %#o = %v", flag, got)
		}
	}
}

func TestLocate(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.Contains(gomod, []byte("module github.com/brainsurgeon/brainsurgeon")) {
		t.Fatalf("ModuleRoot() = %s: %v", root, err)
	}

	dir := t.TempDir()
	t.Setenv("BRAINSURGEON_SHARED", dir)
	if got, err := SharedDir(); err != nil || got != dir {
		t.Errorf("SharedDir() = %q, %v; want %q", got, err, dir)
	}
	if got, _ := ScriptPath(); got != filepath.Join(dir, "oracle", "pi-session-oracle.mjs") {
		t.Errorf("ScriptPath() = %q", got)
	}

	t.Setenv("PI_ORACLE_MODULES", "")
	t.Setenv("ORACLE", "/o")
	if got := ModulesDir(); got != filepath.FromSlash("/o/pi/node_modules") {
		t.Errorf("ModulesDir() with ORACLE = %q", got)
	}
	t.Setenv("ORACLE", "")
	t.Setenv("HOME", "/h")
	if got := ModulesDir(); got != filepath.FromSlash("/h/.cache/bs-oracle/pi/node_modules") {
		t.Errorf("ModulesDir() default = %q", got)
	}
	t.Setenv("PI_ORACLE_MODULES", "/m")
	if got := ModulesDir(); got != "/m" {
		t.Errorf("ModulesDir() with PI_ORACLE_MODULES = %q", got)
	}
}
