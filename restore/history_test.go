package restore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestUndoAcrossHistory is the round-trip property over sequences of
// operations: extraction passes with random policies, restores of random
// entries (some asked for by a tool call the host appends, which the
// write-back redacts), clock jumps past the protection window so restored
// entries are extracted again into newer records, set_extractable and more
// passes. Whatever the history, RestoreAll pristine gives back the
// transcript as the host wrote it (the generated original plus the lines the
// host appended), byte for byte. Only public APIs are used
// (session.NewStore, sidedir.New, restore.New), so the property
// holds whatever the side store's layout.
func TestUndoAcrossHistory(t *testing.T) {
	maxOps, maxSize := 12, 40_000
	if testing.Short() {
		maxOps, maxSize = 6, 15_000
	}
	var n counts
	defer func() {
		t.Logf("over all runs: %d passes extracting %d entries (%d again after a restore), %d restores (%d redacted), %d set_extractable",
			n.passes, n.extracted, n.reextracted, n.restores, n.redacted, n.setExtractable)
	}()
	rapid.Check(t, func(rt *rapid.T) {
		density := synth.DensityToday
		if rapid.Bool().Draw(rt, "realDensity") {
			density = synth.DensityReal
		}
		var buf bytes.Buffer
		if _, err := synth.Generate(&buf, synth.Options{
			Size:        int64(rapid.IntRange(3_000, maxSize).Draw(rt, "size")),
			Seed:        rapid.Uint64Range(1, 1<<40).Draw(rt, "seed"),
			MinResult:   300,
			MaxResult:   3000,
			MinThinking: 100,
			MaxThinking: 2000,
			ImageEvery:  rapid.IntRange(0, 3).Draw(rt, "imageEvery"),
			Density:     density,
		}); err != nil {
			rt.Fatal(err)
		}
		h := newHistory(t, rt, buf.Bytes())
		h.n = &n
		ops := rapid.IntRange(1, maxOps).Draw(rt, "ops")
		for i := range ops {
			switch op := rapid.SampledFrom([]string{"pass", "pass", "pass", "restore", "restoreCalled", "restoreCalled", "advance", "advance", "setExtractable", "cycle"}).Draw(rt, fmt.Sprintf("op%d", i)); op {
			case "pass":
				h.pass(rt)
			case "restore":
				h.restore(rt, false)
			case "restoreCalled":
				h.restore(rt, true)
			case "advance":
				h.clk.t = h.clk.t.Add(time.Duration(rapid.IntRange(4, 25).Draw(rt, "minutes")) * time.Minute)
			case "setExtractable":
				h.setExtractable(rt)
			case "cycle":
				// A restore, the protection window running out, and a
				// pass that extracts the entry again into a newer record.
				h.restore(rt, rapid.Bool().Draw(rt, "cycleCalled"))
				h.clk.t = h.clk.t.Add(11 * time.Minute)
				h.passWith(rt, extract.Policy{Enabled: true, MinValueLength: 100, Triggers: bs.TriggerTypes(), KeepAfterRestore: 10 * time.Minute})
			}
		}
		res, err := h.r.RestoreAll(context.Background(), h.ref, true)
		if err != nil {
			rt.Fatal(err)
		}
		got, err := os.ReadFile(h.ref.Path)
		if err != nil {
			rt.Fatal(err)
		}
		if !bytes.Equal(got, h.want) {
			rt.Fatalf("RestoreAll pristine after %d operations does not give the original back (%d bytes, want %d): %+v\n%s",
				ops, len(got), len(h.want), res, firstDiff(got, h.want))
		}
		if !res.Pristine {
			rt.Fatalf("not pristine: %+v", res.Remaining)
		}
	})
}

// history is one transcript and the tools that act on it.
type history struct {
	want  []byte // the transcript as the host wrote it
	ref   bs.SessionRef
	st    *session.Store
	side  bs.SideStore
	r     *restore.Restorer
	clk   *clock
	calls int
	// restored holds the entries restored so far; n counts what happened.
	restored map[string]bool
	n        *counts
}

type counts struct {
	passes, extracted, reextracted, restores, redacted, setExtractable int
}

func newHistory(t *testing.T, rt *rapid.T, orig []byte) *history {
	root := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		rt.Fatal(err)
	}
	path := filepath.Join(dir, "h1.jsonl")
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		rt.Fatal(err)
	}
	st := session.NewStore(root)
	st.Writer.Quiet = 0 // no quiet period
	ref, err := st.Resolve(context.Background(), path)
	if err != nil {
		rt.Fatal(err)
	}
	h := &history{want: bytes.Clone(orig), ref: ref, st: st, side: sidedir.New(st), clk: &clock{now}, restored: map[string]bool{}, n: &counts{}}
	h.r = restore.New(st, h.side, config.StateDir(root))
	h.r.Clock = h.clk
	h.rest()
	return h
}

// rest gives the transcript an old modification time, as a session at
// rest has.
func (h *history) rest() {
	old := h.clk.t.Add(-time.Hour)
	_ = os.Chtimes(h.ref.Path, old, old)
}

func (h *history) pass(rt *rapid.T) {
	p := extract.Policy{Enabled: true,
		KeepRecent:       rapid.IntRange(0, 3).Draw(rt, "keepRecent"),
		MinValueLength:   rapid.IntRange(100, 1500).Draw(rt, "minLen"),
		KeepAfterRestore: 10 * time.Minute,
	}
	if rapid.Bool().Draw(rt, "allTriggers") {
		p.Triggers = bs.TriggerTypes()
	} else {
		for _, tt := range bs.TriggerTypes() {
			if rapid.Bool().Draw(rt, "trigger-"+string(tt)) {
				p.Triggers = append(p.Triggers, tt)
			}
		}
	}
	h.passWith(rt, p)
}

func (h *history) passWith(rt *rapid.T, p extract.Policy) {
	x := &extract.Extractor{Policy: p, Store: h.st, Side: h.side, Clock: h.clk}
	_, before := h.entries(rt)
	if _, err := x.Run(context.Background(), h.ref); err != nil {
		rt.Fatal(err)
	}
	h.rest()
	h.n.passes++
	_, after := h.entries(rt)
	had := map[string]bool{}
	for _, id := range before {
		had[id] = true
	}
	for _, id := range after {
		if !had[id] {
			h.n.extracted++
			if h.restored[id] {
				h.n.reextracted++
			}
		}
	}
}

// entries returns the ids of the transcript's entries, and of those that
// hold a placeholder.
func (h *history) entries(rt *rapid.T) (all, extracted []string) {
	data, err := os.ReadFile(h.ref.Path)
	if err != nil {
		rt.Fatal(err)
	}
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		e := r.Entry()
		if e.Kind != bs.KindEntry || e.ID == "" || e.Type != "message" {
			continue
		}
		all = append(all, e.ID)
		if bytes.Contains(r.Raw(), []byte("[[extracted-")) {
			extracted = append(extracted, e.ID)
		}
	}
	return all, extracted
}

// restore restores a random extracted entry. When called, the host first
// appends the agent's tool call asking for it and the call's result, and
// the write-back redacts them.
func (h *history) restore(rt *rapid.T, called bool) {
	_, extracted := h.entries(rt)
	if len(extracted) == 0 {
		return
	}
	id := rapid.SampledFrom(extracted).Draw(rt, "restoreID")
	var opts restore.RestoreOptions
	if called {
		h.calls++
		callID := fmt.Sprintf("call_h%d", h.calls)
		name, args := "purge_control", fmt.Sprintf(`{"action":"restore","entry":%q}`, id)
		if rapid.Bool().Draw(rt, "viaExec") {
			name, args = "exec", fmt.Sprintf(`{"command":"purge_control restore %s --agent main --session h1"}`, id)
		}
		text := "restored"
		if rapid.Bool().Draw(rt, "longResult") {
			text = strings.Repeat("the restored value, again; ", 40)
		}
		ts := h.clk.t.Format("2006-01-02T15:04:05.000Z")
		lines := fmt.Sprintf(`{"type":"message","id":"hc%d","parentId":null,"timestamp":%q,"message":%s}`+"\n"+
			`{"type":"message","id":"hr%d","parentId":"hc%d","timestamp":%q,"message":%s}`+"\n",
			h.calls, ts, assistantCall("restore it", callID, name, args),
			h.calls, h.calls, ts, toolResult(callID, name, text))
		f, err := os.OpenFile(h.ref.Path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			rt.Fatal(err)
		}
		if _, err := f.WriteString(lines); err != nil {
			rt.Fatal(err)
		}
		f.Close()
		h.want = append(h.want, lines...)
		h.rest()
		if rapid.Bool().Draw(rt, "withCallID") {
			opts.ToolCallID = callID
		}
	}
	res, err := h.r.Restore(context.Background(), h.ref, id, nil, opts)
	if err != nil {
		rt.Fatal(err)
	}
	if !res.Restored || !res.Applied {
		rt.Fatalf("restore %s: %+v", id, res)
	}
	if called && !res.Redacted {
		rt.Fatalf("restore %s: the call was not redacted: %+v", id, res)
	}
	h.rest()
	h.restored[id] = true
	h.n.restores++
	if res.Redacted {
		h.n.redacted++
	}
}

func (h *history) setExtractable(rt *rapid.T) {
	all, _ := h.entries(rt)
	if len(all) == 0 {
		return
	}
	id := rapid.SampledFrom(all).Draw(rt, "extractableID")
	v := rapid.SampledFrom([]string{"true", "false", "0", "2", "5"}).Draw(rt, "extractable")
	if _, err := h.r.SetExtractable(context.Background(), h.ref, id, v); err != nil {
		rt.Fatal(err)
	}
	h.rest()
	h.n.setExtractable++
}
