package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// fullContext returns the raw lines of what Open + Context build: the
// compaction line (or nil) and the message lines.
func fullContext(t *testing.T, path string) (leaf string, comp []byte, msgs [][]byte, offs []int64) {
	t.Helper()
	ctx := context.Background()
	tr, err := session.Open(ctx, path, bs.SessionRef{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := tr.Leaf(); ok {
		leaf = n.ID
	}
	c := tr.Context()
	nodes := tr.Nodes()
	var lines []int
	if c.Compaction >= 0 {
		lines = append(lines, nodes[c.Compaction].Line)
	}
	for _, i := range c.Messages {
		lines = append(lines, nodes[i].Line)
	}
	byLine := map[int][]byte{}
	sorted := append([]int(nil), lines...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for e, err := range tr.Lines(ctx, sorted) {
		if err != nil {
			t.Fatal(err)
		}
		byLine[e.Line] = e.Raw
	}
	k := 0
	if c.Compaction >= 0 {
		comp = byLine[lines[0]]
		k = 1
	}
	for _, l := range lines[k:] {
		msgs = append(msgs, byLine[l])
		offs = append(offs, nodes[l-1].Offset)
	}
	return leaf, comp, msgs, offs
}

// checkLoaded compares LoadContext with Open + Context on one file.
func checkLoaded(t *testing.T, path string) session.LoadedContext {
	t.Helper()
	lc, err := session.LoadContext(context.Background(), path, bs.SessionRef{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, comp, msgs, offs := fullContext(t, path)
	if lc.Leaf != leaf {
		t.Errorf("leaf = %q, want %q", lc.Leaf, leaf)
	}
	switch {
	case comp == nil && lc.Compaction != nil:
		t.Errorf("compaction at offset %d, want none", lc.Compaction.Offset)
	case comp != nil && lc.Compaction == nil:
		t.Errorf("no compaction, want one")
	case comp != nil && !bytes.Equal(comp, lc.Compaction.Raw):
		t.Errorf("compaction differs")
	}
	if len(lc.Entries) != len(msgs) {
		t.Fatalf("%d context entries (full read %v: %s), want %d", len(lc.Entries), lc.FullRead, lc.FullReadReason, len(msgs))
	}
	for i, e := range lc.Entries {
		if !bytes.Equal(e.Raw, msgs[i]) || e.Offset != offs[i] {
			t.Fatalf("entry %d differs (offset %d, want %d)", i, e.Offset, offs[i])
		}
	}
	return lc
}

// TestLoadContextCorpus proves the read from the end equals the full
// read on every corpus transcript.
func TestLoadContextCorpus(t *testing.T) {
	fromEnd := 0
	files := corpusTranscripts(t)
	for _, f := range files {
		t.Run(shortName(f), func(t *testing.T) {
			lc := checkLoaded(t, f)
			if !lc.FullRead {
				fromEnd++
			} else {
				t.Logf("full read: %s", lc.FullReadReason)
			}
		})
	}
	t.Logf("%d of %d transcripts loaded from the end", fromEnd, len(files))
	if fromEnd == 0 {
		t.Errorf("no transcript was loaded from the end")
	}
}

// TestLoadContextShapes covers the shapes that force a full read, and the
// tree shapes the shortcut must follow.
func TestLoadContextShapes(t *testing.T) {
	hdr := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`
	msg := func(id, parent, role string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":%q,"content":"x"}}`, id, p, role)
	}
	comp := func(id, parent, first string) string {
		return fmt.Sprintf(`{"type":"compaction","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:02.000Z","summary":"s","firstKeptEntryId":%q,"tokensBefore":9}`, id, parent, first)
	}
	for _, tt := range []struct {
		name     string
		lines    []string
		fullRead bool
	}{
		{"Empty", []string{hdr}, false},
		{"NoCompaction", []string{hdr, msg("a", "", "user"), msg("b", "a", "assistant")}, false},
		{"Compaction", []string{hdr, msg("a", "", "user"), msg("b", "a", "assistant"), msg("c", "b", "user"), comp("k", "c", "b"), msg("d", "k", "assistant")}, false},
		{"FirstKeptMissing", []string{hdr, msg("a", "", "user"), comp("k", "a", "zz"), msg("d", "k", "assistant")}, false},
		{"Branch", []string{hdr, msg("a", "", "user"), msg("b", "a", "assistant"), msg("x", "a", "assistant"), msg("c", "b", "user")}, false},
		{"TwoCompactions", []string{hdr, msg("a", "", "user"), msg("b", "a", "assistant"), comp("k", "b", "b"), msg("c", "k", "user"), comp("l", "c", "c"), msg("d", "l", "assistant")}, false},
		{"SideAppend", []string{hdr, msg("a", "", "user"), `{"type":"custom","id":"s","parentId":"a","appendMode":"side","timestamp":"2026-01-01T00:00:03.000Z"}`}, false},
		{"V1", []string{`{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00.000Z"}`, `{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}`}, true},
		{"LeafLine", []string{hdr, msg("a", "", "user"), msg("b", "a", "assistant"), `{"type":"leaf","id":"q","targetId":"a","timestamp":"2026-01-01T00:00:03.000Z"}`}, true},
		{"DuplicateID", []string{hdr, msg("a", "", "user"), msg("b", "a", "assistant"), msg("c", "b", "user"), msg("b", "c", "assistant"), msg("e", "b", "user")}, true},
		{"ParentMissing", []string{hdr, msg("a", "gone", "user"), msg("b", "a", "assistant")}, true},
		{"NoTrailingNewline", []string{hdr, msg("a", "", "user"), msg("b", "a", "assistant") + "\x00"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Join(tt.lines, "\n") + "\n"
			text = strings.TrimSuffix(text, "\x00\n")
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			lc := checkLoaded(t, path)
			if lc.FullRead != tt.fullRead {
				t.Errorf("FullRead = %v (%s), want %v", lc.FullRead, lc.FullReadReason, tt.fullRead)
			}
		})
	}
}

// TestLoadContextRandomTrees compares the read from the end with the full
// read on random trees: branches, side appends, compactions whose first
// kept entry is on the path, off it or missing, messages of every kind.
func TestLoadContextRandomTrees(t *testing.T) {
	fromEnd := 0
	defer func() {
		if fromEnd < 150 {
			t.Errorf("only %d of 300 random trees were loaded from the end", fromEnd)
		}
	}()
	for seed := range 300 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := newRand(uint64(seed))
			lines := []string{`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`}
			var ids []string
			leaf := ""
			n := 5 + r.intn(60)
			for i := range n {
				id := fmt.Sprintf("i%d", i)
				parent := leaf
				if len(ids) > 0 && r.intn(8) == 0 {
					parent = ids[r.intn(len(ids))] // a branch
				}
				if r.intn(40) == 0 {
					parent = "" // a second root
				}
				p := "null"
				if parent != "" {
					p = fmt.Sprintf("%q", parent)
				}
				side := ""
				if r.intn(15) == 0 {
					side = `"appendMode":"side",`
				}
				var body string
				switch k := r.intn(10); {
				case k < 6:
					role := []string{"user", "assistant", "toolResult"}[r.intn(3)]
					body = fmt.Sprintf(`"type":"message","message":{"role":%q,"content":"x%d"}`, role, i)
				case k == 6:
					body = `"type":"custom_message","customType":"c","content":"y"`
				case k == 7:
					body = `"type":"model_change","provider":"p","modelId":"m"`
				default:
					first := "nope"
					if len(ids) > 0 && r.intn(5) > 0 {
						first = ids[r.intn(len(ids))]
					}
					body = fmt.Sprintf(`"type":"compaction","summary":"s%d","firstKeptEntryId":%q,"tokensBefore":1`, i, first)
				}
				lines = append(lines, fmt.Sprintf(`{%s"id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z",%s}`, side, id, p, body))
				ids = append(ids, id)
				if side == "" {
					leaf = id
				}
			}
			path := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if lc := checkLoaded(t, path); !lc.FullRead {
				fromEnd++
			}
		})
	}
}

// rng is a small deterministic generator for the random trees.
type rng struct{ s uint64 }

func newRand(seed uint64) *rng { return &rng{s: seed*0x9e3779b97f4a7c15 + 1} }

func (r *rng) intn(n int) int {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return int(r.s % uint64(n))
}
