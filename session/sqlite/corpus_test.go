package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// providerRepaired is the session whose rows OpenClaw's importer changed
// (SOURCES.md): 4 rows with the provider and api renamed.
const providerRepaired = "5e9096eb-a13b-48ae-990d-ca9d6f231b05"

// repairProvider applies the importer's provider repair to a JSONL line.
func repairProvider(line []byte) []byte {
	line = bytes.ReplaceAll(line, []byte(`"openai-codex-responses"`), []byte(`"openai-chatgpt-responses"`))
	return bytes.ReplaceAll(line, []byte(`"openai-codex"`), []byte(`"openai"`))
}

// TestCorpusMatchesJSONL checks every session of every corpus store
// against the JSONL it was imported from: the same lines in order, byte
// for byte (except the importer's provider repair in one session), and
// the same tree as session.Open builds from the JSONL.
func TestCorpusMatchesJSONL(t *testing.T) {
	ctx := context.Background()
	sessions := 0
	for _, cs := range corpusStores(t) {
		t.Run(cs.name, func(t *testing.T) {
			state, _ := copyStore(t, cs.path, cs.agent)
			st := sqlite.NewStore(state, sqlite.Options{})
			refs, _, err := st.Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(refs) == 0 {
				t.Fatal("no sessions listed")
			}
			for _, ref := range refs {
				sessions++
				t.Run(ref.ID, func(t *testing.T) {
					checkAgainstJSONL(t, st, cs, ref)
				})
			}
		})
	}
	want := 8 // the sessions of SOURCES.md
	if stores := corpusStores(t); len(stores) == 1 && stores[0].repo == selfMadeRepo {
		want = len(testcorpus.SelfMadeStoreSessions("main"))
	}
	if sessions != want {
		t.Errorf("checked %d sessions, want %d", sessions, want)
	}
}

func checkAgainstJSONL(t *testing.T, st *sqlite.Store, cs corpusStore, ref bs.SessionRef) {
	ctx := context.Background()
	src := jsonlOf(t, cs, ref.ID)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	var visited int
	tr, err := st.Open(ctx, ref, &bs.Visitor{Visit: func(e *bs.Entry) error {
		visited++
		if e.Line != visited {
			t.Errorf("visit line %d, want %d", e.Line, visited)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if visited != len(lines) {
		t.Errorf("visited %d lines, JSONL has %d", visited, len(lines))
	}
	n, repaired := 0, 0
	for e, err := range tr.Entries(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Line != n+1 {
			t.Fatalf("entry line %d, want %d", e.Line, n+1)
		}
		if n >= len(lines) {
			t.Fatalf("more rows than the %d JSONL lines", len(lines))
		}
		want := lines[n]
		if !bytes.Equal(e.Raw, want) {
			if ref.ID == providerRepaired && bytes.Equal(e.Raw, repairProvider(want)) {
				repaired++
			} else {
				t.Errorf("line %d differs from the JSONL (%d vs %d bytes)", e.Line, len(e.Raw), len(want))
			}
		}
		n++
	}
	if n != len(lines) {
		t.Errorf("read %d rows, JSONL has %d lines", n, len(lines))
	}
	wantRepaired := 0
	if ref.ID == providerRepaired {
		wantRepaired = 4
	}
	if repaired != wantRepaired {
		t.Errorf("%d rows differ by the provider repair, want %d", repaired, wantRepaired)
	}
	// One line read on its own equals the streamed one.
	last, err := tr.Entry(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(last.Raw, lines[n-1]) && !bytes.Equal(last.Raw, repairProvider(lines[n-1])) {
		t.Errorf("Entry(%d) differs from the JSONL", n)
	}

	jt, err := session.Open(ctx, src, bs.SessionRef{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(tr, tr.ActivePath()), ids(jt, jt.ActivePath()); !equalStrings(got, want) {
		t.Errorf("active path: %d entries ending %v, JSONL %d ending %v", len(got), tail(got), len(want), tail(want))
	}
	if got, want := tr.Context().Count(), jt.Context().Count(); got != want {
		t.Errorf("context messages %d, JSONL %d", got, want)
	}
	if got, want := len(tr.MessagePositions()), len(jt.MessagePositions()); got != want {
		t.Errorf("message positions %d, JSONL %d", got, want)
	}
	if got, want := tr.Header(), jt.Header(); got.ID != want.ID || got.Version != want.Version {
		t.Errorf("header %+v, JSONL %+v", got, want)
	}
	if len(tr.Malformed()) != len(jt.Malformed()) {
		t.Errorf("malformed %d, JSONL %d", len(tr.Malformed()), len(jt.Malformed()))
	}
	for i, nd := range tr.Nodes() {
		if nd.Line != i+1 || nd.Offset != int64(i) {
			t.Fatalf("node %d: line %d seq %d, want line %d seq %d", i, nd.Line, nd.Offset, i+1, i)
		}
	}
}

func ids(t bs.Transcript, path []int) []string {
	nodes := t.Nodes()
	out := make([]string, len(path))
	for i, k := range path {
		out[i] = nodes[k].ID
	}
	return out
}

func tail(s []string) []string {
	if len(s) > 3 {
		return s[len(s)-3:]
	}
	return s
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
