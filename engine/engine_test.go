package engine_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// extractCopy runs a real extraction pass with policy p over a copy of the
// session at path and returns the copy's path.
func extractCopy(t *testing.T, path string, p extract.Policy) string {
	t.Helper()
	return extractCopyAt(t, path, p, clock)
}

// extractCopyAt is extractCopy at the time now.
func extractCopyAt(t *testing.T, path string, p extract.Policy, now time.Time) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, ref := openStore(t, cp)
	p.Enabled = true
	x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(st), Clock: fixedClock{now}}
	if _, err := x.Run(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestCollapseIsExtractionShaped proves that a collapsed message's content
// in the view is, byte for byte, the "/message/content" of the line an
// extraction pass with the same policy writes.
func TestCollapseIsExtractionShaped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		preview int
		image   bool
	}{
		{"placeholder", 0, false},
		{"preview", 40, false},
		{"image", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			for k := range 8 {
				s.turn(k, 3000, 1000, tc.image)
			}
			s.write()
			st, ref := openStore(t, s.path)
			p := testPolicy()
			p.PreviewChars = tc.preview
			e := newEngine(t, st, p)
			host := skeleton(t, s.path)
			v, err := e.Assemble(context.Background(), ref, request(host, 0))
			if err != nil {
				t.Fatal(err)
			}
			if v.Passthrough != "" || v.Matched != len(host) || v.Unmatched != 0 {
				t.Fatalf("view passthrough %q, matched %d unmatched %d of %d", v.Passthrough, v.Matched, v.Unmatched, len(host))
			}
			if len(v.Replace) == 0 || !slices.Contains(v.Layers, "collapse") {
				t.Fatalf("view replaces %d messages, layers %v: want collapses", len(v.Replace), v.Layers)
			}
			cp := extractCopy(t, s.path, p)
			for _, r := range v.Replace {
				want := contentOf(t, cp, host[r.Index].id)
				if !bytes.Equal(r.Content, want) {
					t.Errorf("message %d (%s): view content\n%s\nextraction wrote\n%s", r.Index, host[r.Index].Role, r.Content, want)
				}
				if bytes.Equal(r.Content, host[r.Index].content) {
					t.Errorf("message %d: replaced by its own content", r.Index)
				}
			}
			// Every tool result the extraction changed is replaced in
			// the view, and no other message: the view never collapses
			// an assistant's or a user's content (the extraction may
			// move thinking out of the file).
			changed := 0
			for i, m := range skeleton(t, cp) {
				if m.Role == "toolResult" && !bytes.Equal(m.content, host[i].content) {
					changed++
				}
			}
			for _, r := range v.Replace {
				if role := host[r.Index].Role; role != "toolResult" {
					t.Errorf("message %d: a %s message replaced in the view", r.Index, role)
				}
			}
			if changed != len(v.Replace) {
				t.Errorf("extraction changed the content of %d messages, the view replaced %d", changed, len(v.Replace))
			}
			for i := 1; i < len(v.Replace); i++ {
				if v.Replace[i].Index <= v.Replace[i-1].Index {
					t.Fatalf("replacements not ascending: %d after %d", v.Replace[i].Index, v.Replace[i-1].Index)
				}
			}
			if v.PredictedTokens <= v.EstimatedTokens || v.Turn != 1 || v.Changed {
				t.Errorf("view predicted %d estimated %d turn %d changed %v", v.PredictedTokens, v.EstimatedTokens, v.Turn, v.Changed)
			}
		})
	}
}

// TestExtractedInFileIsLeftAsSent proves that a value the file already
// holds as a placeholder is not replaced again: the host sends the same
// bytes the view would.
func TestExtractedInFileIsLeftAsSent(t *testing.T) {
	s := newSession(t)
	for k := range 6 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	p := testPolicy()
	cp := extractCopy(t, s.path, p)
	st, ref := openStore(t, cp)
	e := newEngine(t, st, p)
	v, err := e.Assemble(context.Background(), ref, request(skeleton(t, cp), 0))
	if err != nil {
		t.Fatal(err)
	}
	if v.Passthrough != "" || len(v.Replace) != 0 {
		t.Fatalf("view of an extracted session: passthrough %q, %d replacements; want none", v.Passthrough, len(v.Replace))
	}
}

// TestStickyBatchedRestore walks a session through the collapse's life:
// new collapses wait while they save little, apply in one batch when the
// view nears the window, stay (without changing the prefix) when the view
// is small again, and a restore returns the stored bytes and expands the
// value on the next turn.
func TestStickyBatchedRestore(t *testing.T) {
	s := newSession(t)
	for k := range 8 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	p := testPolicy()
	p.MinSavingTokens = 1_000_000 // never worth it on its own
	e := newEngine(t, st, p)
	ctx := context.Background()
	host := skeleton(t, s.path)

	v1, err := e.Assemble(ctx, ref, request(host, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if len(v1.Replace) != 0 || slices.Contains(v1.Layers, "collapse") {
		t.Fatalf("turn 1: %d replacements (layers %v); want the batch to wait", len(v1.Replace), v1.Layers)
	}
	// Above the prune threshold, the batch applies.
	e.Settings.PruneTriggerPercent = 0.001
	v2, err := e.Assemble(ctx, ref, request(host, 1_000_000))
	e.Settings.PruneTriggerPercent = 80
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Replace) == 0 || !slices.Contains(v2.Layers, "collapse") || !v2.Changed {
		t.Fatalf("turn 2: %d replacements, layers %v, changed %v; want the batch applied and the prefix changed", len(v2.Replace), v2.Layers, v2.Changed)
	}
	// A new turn arrives; the view is far from the threshold again: the
	// collapses stay.
	s.turn(8, 3000, 1000, false)
	s.write()
	host = skeleton(t, s.path)
	v3, err := e.Assemble(ctx, ref, request(host, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if v3.Changed || len(v3.Replace) < len(v2.Replace) {
		t.Fatalf("turn 3: changed %v, %d replacements (turn 2: %d); want the collapses kept and the prefix stable", v3.Changed, len(v3.Replace), len(v2.Replace))
	}
	for i, r := range v2.Replace {
		if !bytes.Equal(r.Content, v3.Replace[i].Content) || r.Index != v3.Replace[i].Index {
			t.Fatalf("turn 3 replacement %d differs from turn 2's", i)
		}
	}
	// Restore the first collapsed value.
	first := v3.Replace[0].Index
	id := host[first].id
	val, err := e.Value(ctx, ref, id)
	if err != nil {
		t.Fatal(err)
	}
	if !val.Collapsed || !bytes.Equal(val.Content, host[first].content) {
		t.Fatalf("Value(%s): collapsed %v, %d bytes; want the stored %d bytes of a collapsed entry", id, val.Collapsed, len(val.Content), len(host[first].content))
	}
	v4, err := e.Assemble(ctx, ref, request(host, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(v4.Replace, func(r engine.Replacement) bool { return r.Index == first }) {
		t.Fatalf("turn 4 still collapses restored message %d", first)
	}
	if !v4.Changed || !slices.Contains(v4.Layers, "restore") || len(v4.Replace) != len(v3.Replace)-1 {
		t.Fatalf("turn 4: changed %v, layers %v, %d replacements; want the restore to change the prefix and nothing else", v4.Changed, v4.Layers, len(v4.Replace))
	}
	stat, err := e.Status(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !stat.Active || stat.Turns != 4 || stat.PrefixChanges != 2 || stat.Collapsed != len(v4.Replace) || stat.CollapsedChars <= 0 {
		t.Errorf("status %+v; want active, 4 turns, 2 prefix changes, %d collapsed", stat, len(v4.Replace))
	}
	if vs := stat.View; vs == nil || vs.Turn != 4 || vs.PredictedTokens != v4.PredictedTokens || vs.HostMessages != len(host) ||
		vs.Messages != len(host) || vs.Chars <= 0 || vs.Chars >= vs.HostChars || vs.Summarized || vs.At.IsZero() {
		t.Errorf("status view %+v; want turn 4, predicted %d, %d messages, fewer chars than the host's (values collapsed)", vs, v4.PredictedTokens, len(host))
	}
}

// TestBatching decides a batch of new collapses by what it saves.
func TestBatching(t *testing.T) {
	for _, tc := range []struct {
		name      string
		minSaving int
		prune     float64
		apply     bool
	}{
		{"saves enough", 100, 80, true},
		{"below min_saving_tokens", 1_000_000, 80, false},
		{"above the prune threshold", 1_000_000, 0.001, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			for k := range 6 {
				s.turn(k, 4000, 1000, false)
			}
			s.write()
			st, ref := openStore(t, s.path)
			p := testPolicy()
			p.MinSavingTokens = tc.minSaving
			e := newEngine(t, st, p)
			e.Settings.PruneTriggerPercent = tc.prune
			v, err := e.Assemble(context.Background(), ref, request(skeleton(t, s.path), 0))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(v.Replace) > 0; got != tc.apply {
				t.Fatalf("%d replacements; want applied %v", len(v.Replace), tc.apply)
			}
		})
	}
}

// TestPassthrough proves that messages that cannot be joined pass through
// with a reason, never an error.
func TestPassthrough(t *testing.T) {
	s := newSession(t)
	for k := range 4 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	host := skeleton(t, s.path)
	for _, tc := range []struct {
		name      string
		edit      func([]hostMsg) []hostMsg
		pass      bool
		unmatched int
	}{
		{"same", func(m []hostMsg) []hostMsg { return m }, false, 0},
		{"shifted timestamps", func(m []hostMsg) []hostMsg {
			out := slices.Clone(m)
			for i := range out {
				out[i].Timestamp += 7
			}
			return out
		}, true, len(host)},
		{"other tool call ids", func(m []hostMsg) []hostMsg {
			out := slices.Clone(m)
			for i := range out {
				out[i].ToolCallID += "x"
				if out[i].Role == "assistant" && len(out[i].ToolCallIDs) > 0 {
					out[i].ToolCallIDs = []string{"other"}
				}
			}
			return out
		}, false, 8},
		{"an injected message", func(m []hostMsg) []hostMsg {
			out := slices.Clone(m[:5])
			out = append(out, hostMsg{Message: engine.Message{Role: "user", Timestamp: 1, Chars: 10}})
			return append(out, m[5:]...)
		}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, st, testPolicy())
			v, err := e.Assemble(context.Background(), ref, request(tc.edit(host), 0))
			if err != nil {
				t.Fatal(err)
			}
			if (v.Passthrough != "") != tc.pass || v.Unmatched != tc.unmatched {
				t.Fatalf("passthrough %q, unmatched %d; want passthrough %v, unmatched %d", v.Passthrough, v.Unmatched, tc.pass, tc.unmatched)
			}
			if tc.pass && (len(v.Replace) != 0 || v.Summary != nil || v.FirstKept != 0) {
				t.Fatalf("a passthrough that changes messages: %+v", v)
			}
		})
	}
}

// TestErrors proves what Assemble, Value and Status refuse.
func TestErrors(t *testing.T) {
	s := newSession(t)
	s.turn(0, 100, 1000, false)
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	ctx := context.Background()
	bad := ref
	bad.Agent = "../x"
	if _, err := e.Assemble(ctx, bad, engine.Request{}); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("Assemble with agent %q: %v; want ErrInvalid", bad.Agent, err)
	}
	gone := ref
	gone.ID = "5e551011-0000-4000-8000-0000000000ff"
	gone.Path = ""
	if _, err := e.Assemble(ctx, gone, engine.Request{}); err == nil {
		t.Errorf("Assemble of an unknown session: no error")
	}
	if _, err := e.Value(ctx, ref, "../etc"); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("Value of a bad id: %v; want ErrInvalid", err)
	}
	if _, err := e.Value(ctx, ref, "deadbeef"); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("Value of an unknown entry: %v; want ErrNotFound", err)
	}
	if _, err := (&engine.Engine{StateDir: t.TempDir()}).Assemble(ctx, ref, engine.Request{}); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("Assemble without a Store: %v; want ErrInvalid", err)
	}
}

// TestState proves where and how the state is kept: one file per session,
// 0600 in 0700 directories; a corrupt file is an empty state; a read-only
// engine writes nothing.
func TestState(t *testing.T) {
	s := newSession(t)
	for k := range 3 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	ctx := context.Background()
	host := skeleton(t, s.path)

	ro := newEngine(t, st, testPolicy())
	ro.ReadOnly = true
	if _, err := ro.Assemble(ctx, ref, request(host, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ro.StateDir, "engine")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only engine wrote its state dir: %v", err)
	}

	e := newEngine(t, st, testPolicy())
	if _, err := e.Assemble(ctx, ref, request(host, 0)); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(e.StateDir, "engine", "main", ref.ID+".json")
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{file, 0o600}, {filepath.Dir(file), 0o700 | os.ModeDir}, {filepath.Dir(filepath.Dir(file)), 0o700 | os.ModeDir}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode(), c.mode)
		}
	}
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := e.Assemble(ctx, ref, request(host, 0))
	if err != nil {
		t.Fatalf("a corrupt state file blocks the turn: %v", err)
	}
	if v.Turn != 1 {
		t.Errorf("after a corrupt state file: turn %d, want 1 (an empty state)", v.Turn)
	}
}

// TestCalibration proves that the prediction converges on a session whose
// provider records usage: after a few turns, the predicted size of a
// turn's first request is within 5 % of what the provider then records.
func TestCalibration(t *testing.T) {
	s := newSession(t)
	s.turn(0, 3000, 1000, false)
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	ctx := context.Background()
	// The provider's count: a fixed overhead (system prompt, tools) and a
	// tokenizer that counts 15 % more than chars/4.
	measure := func(base int) int { return 1800 + int(math.Round(1.15*float64(base))) }
	var errs []float64
	for k := 1; k <= 14; k++ {
		v, err := e.Assemble(ctx, ref, request(skeleton(t, s.path), 0))
		if err != nil {
			t.Fatal(err)
		}
		stat, err := e.Status(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		got := measure(stat.Last.BaseTokens)
		if k > 3 {
			errs = append(errs, math.Abs(float64(v.PredictedTokens-got))/float64(got))
		}
		// The turn runs: its first model request records the measure.
		s.turn(k, 1000+300*k, got, false)
		s.write()
	}
	stat, err := e.Status(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if vs := stat.View; vs == nil || vs.Turn != 14 || vs.MeasuredTurn != 13 || vs.MeasuredTokens <= 0 {
		t.Errorf("status view %+v; want turn 14 with turn 13's measured size (turn 14's request is not recorded yet)", vs)
	}
	sort.Float64s(errs)
	if med := errs[len(errs)/2]; med > 0.05 {
		t.Fatalf("median prediction error %.1f%% after calibration, want ≤ 5%% (errors %v)", med*100, errs)
	}
	if last := errs[len(errs)-1]; last > 0.05 {
		t.Errorf("largest prediction error %.1f%%", last*100)
	}
}

// TestMessagesWithoutRequest proves that with no request (a compact call)
// every context message counts as sent and the view is the one that
// stands: no collapse before one was served, the sticky ones after.
func TestMessagesWithoutRequest(t *testing.T) {
	s := newSession(t)
	for k := range 5 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	ctx := context.Background()
	tr, err := st.Open(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := skeleton(t, s.path)
	index, tokens, collapsed, err := e.MessagesOf(ctx, tr, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(index) != len(host) || len(collapsed) != 0 {
		t.Fatalf("%d messages, %d collapsed; want %d and none before a view was served", len(index), len(collapsed), len(host))
	}
	for i := range host {
		if index[i] != i || tokens[i] != (host[i].Chars+3)/4 && tokens[i] != (len(host[i].content)+3)/4 {
			t.Errorf("message %d: index %d, tokens %d (%d chars)", i, index[i], tokens[i], host[i].Chars)
		}
	}
	if _, err := e.Assemble(ctx, ref, request(host, 0)); err != nil {
		t.Fatal(err)
	}
	index, tokens, collapsed, err = e.MessagesOf(ctx, tr, ref)
	if err != nil {
		t.Fatal(err)
	}
	cp := extractCopy(t, s.path, testPolicy())
	want := 0
	for i, m := range skeleton(t, cp) {
		if m.Role == "toolResult" && !bytes.Equal(m.content, host[i].content) {
			want++
			if !slices.Contains(collapsed, m.id) {
				t.Errorf("entry %s: extracted in the file, not collapsed", m.id)
			}
			if tokens[i]*4 > len(m.content)+8 {
				t.Errorf("entry %s: %d tokens after the collapse, its collapsed content has %d bytes", m.id, tokens[i], len(m.content))
			}
		}
	}
	if len(collapsed) != want || want == 0 {
		t.Errorf("collapsed %d entries, the extraction %d", len(collapsed), want)
	}
}
