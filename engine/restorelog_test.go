package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestRestoreLog checks the engine as the restore log: it records
// restores (the newest time of each, expired ones dropped), reports them,
// counts its own view restores (Value) among them, takes a recorded entry
// out of the view's collapses, records nothing in read-only mode, and has
// no log for a session without an agent.
func TestRestoreLog(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	for k := range 8 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	now := clock
	e := newEngine(t, st, testPolicy())
	e.Now = func() time.Time { return now }
	got, err := e.Restores(ctx, ref)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Restores of a new session: %v, %v; want an empty map", got, err)
	}
	record := func(id string, at time.Time) {
		t.Helper()
		if err := e.RecordRestore(ctx, ref, id, at); err != nil {
			t.Fatalf("RecordRestore(%s): %v", id, err)
		}
	}
	record("e1", clock.Add(-time.Minute))
	record("e1", clock.Add(-5*time.Minute)) // older: the newest stays
	record("tc-call_1", clock)
	record("old", clock.Add(-20*time.Minute)) // kept until another record
	want := map[string]time.Time{"e1": clock.Add(-time.Minute), "tc-call_1": clock, "old": clock.Add(-20 * time.Minute)}
	if got, _ := e.Restores(ctx, ref); !sameTimes(got, want) {
		t.Fatalf("Restores %v, want %v", got, want)
	}
	record("e2", clock)
	delete(want, "old") // its window (10 minutes) is over
	want["e2"] = clock
	if got, _ := e.Restores(ctx, ref); !sameTimes(got, want) {
		t.Fatalf("Restores after an expired one: %v, want %v", got, want)
	}

	// A value the view collapsed: recording its restore takes it out of
	// the collapses, and the next view shows it in full.
	host := skeleton(t, s.path)
	v, err := e.Assemble(ctx, ref, request(host, 0))
	if err != nil || len(v.Replace) == 0 {
		t.Fatalf("first view: %v, %d replacements", err, len(v.Replace))
	}
	first := host[v.Replace[0].Index].id
	before, _ := e.Status(ctx, ref)
	now = now.Add(time.Second)
	record(first, now)
	after, _ := e.Status(ctx, ref)
	if after.Collapsed != before.Collapsed-1 {
		t.Errorf("collapsed %d after the restore, want %d", after.Collapsed, before.Collapsed-1)
	}
	v, err = e.Assemble(ctx, ref, request(host, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Replace {
		if host[r.Index].id == first {
			t.Errorf("the restored entry %s is still collapsed", first)
		}
	}
	if !v.Changed || !slices.Contains(v.Layers, "restore") {
		t.Errorf("view after the restore: changed %v, layers %v", v.Changed, v.Layers)
	}

	// The view's own restore is recorded too.
	second := host[v.Replace[0].Index].id
	if _, err := e.Value(ctx, ref, second); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Restores(ctx, ref); !got[second].Equal(now) {
		t.Errorf("Value's restore of %s is not in the log: %v", second, got)
	}

	// Read-only: nothing is recorded, no error.
	ro := newEngine(t, st, testPolicy())
	ro.StateDir, ro.ReadOnly = e.StateDir, true
	if err := ro.RecordRestore(ctx, ref, "e3", now); err != nil {
		t.Errorf("read-only RecordRestore: %v", err)
	}
	if got, _ := e.Restores(ctx, ref); !got["e3"].IsZero() {
		t.Error("a read-only engine recorded a restore")
	}

	// A session without an agent (pi's) has its log too, under engine/~pi.
	pi := bs.SessionRef{Backend: bs.BackendJSONL, ID: "pi-session"}
	if err := e.RecordRestore(ctx, pi, "e1", now); err != nil {
		t.Errorf("RecordRestore of a pi session: %v", err)
	}
	if got, err := e.Restores(ctx, pi); err != nil || !got["e1"].Equal(now) {
		t.Errorf("Restores of a pi session: %v, %v; want e1 at %v", got, err, now)
	}
	if _, err := os.Stat(filepath.Join(e.StateDir, "engine", "~pi")); err != nil {
		t.Errorf("the pi session's state is not under engine/~pi: %v", err)
	}
	// No engine state: an unsafe id.
	if err := e.RecordRestore(ctx, ref, "../x", now); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("RecordRestore of ../x: %v, want ErrInvalid", err)
	}
}

func sameTimes(a, b map[string]time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k, t := range a {
		if !t.Equal(b[k]) {
			return false
		}
	}
	return true
}

// TestViewShowsQueuedRestore checks that a value the agent restored while
// the host's row still holds its placeholder (the write-back queued
// because the session is busy) is shown in full from the next view on,
// byte-identical to the content before extraction, for the protection
// window and no longer, and that the view's prefix changes exactly when it
// starts and stops doing so. Without a side store the view shows the row.
func TestViewShowsQueuedRestore(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	for k := range 6 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	orig := skeleton(t, s.path)
	p := testPolicy()
	cp := extractCopy(t, s.path, p)
	st, ref := openStore(t, cp)
	host := skeleton(t, cp)
	k := slices.IndexFunc(host, func(m hostMsg) bool {
		return m.Role == "toolResult" && !bytes.Equal(m.content, orig[slicesIndex(orig, m.id)].content)
	})
	if k < 0 {
		t.Fatal("the extraction changed no tool result")
	}
	id := host[k].id
	now := clock
	e := newEngine(t, st, p)
	e.Side, e.Now = sidedir.New(st), func() time.Time { return now }
	assemble := func() engine.View {
		t.Helper()
		v, err := e.Assemble(ctx, ref, request(host, 0))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	shown := func(v engine.View) json.RawMessage {
		for _, r := range v.Replace {
			if r.Index == k {
				return r.Content
			}
		}
		return nil
	}
	if v := assemble(); shown(v) != nil {
		t.Fatalf("before the restore the view replaces the extracted message: %s", shown(v))
	}
	if err := e.RecordRestore(ctx, ref, id, now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	v := assemble()
	if got := shown(v); !bytes.Equal(got, orig[k].content) {
		t.Fatalf("the view after the restore shows\n%.300s\nwant the content before extraction\n%.300s", got, orig[k].content)
	}
	if !v.Changed || !slices.Contains(v.Layers, "restore") {
		t.Errorf("first view with the value: changed %v, layers %v", v.Changed, v.Layers)
	}
	now = now.Add(time.Minute)
	if v := assemble(); !bytes.Equal(shown(v), orig[k].content) || v.Changed {
		t.Errorf("second view with the value: shown %v, changed %v", shown(v) != nil, v.Changed)
	}
	now = clock.Add(11 * time.Minute) // past keep_after_restore (10 minutes)
	if v := assemble(); shown(v) != nil || !v.Changed {
		t.Errorf("view after the window: shown %v, changed %v; want the placeholder again, a changed prefix", shown(v) != nil, v.Changed)
	}

	// Without a side store the row is what the view shows.
	now = clock
	bare := newEngine(t, st, p)
	bare.Now = func() time.Time { return now }
	if err := bare.RecordRestore(ctx, ref, id, now); err != nil {
		t.Fatal(err)
	}
	v, err := bare.Assemble(ctx, ref, request(host, 0))
	if err != nil || shown(v) != nil {
		t.Errorf("an engine without a side store: %v, shown %v", err, shown(v) != nil)
	}
}

func slicesIndex(msgs []hostMsg, id string) int {
	return slices.IndexFunc(msgs, func(m hostMsg) bool { return m.id == id })
}

// TestViewShowsRestoredSource checks a tool result stored at the source
// (the plugin's "tc-<toolCallId>" record, whose placeholder the row holds
// for good): a restore recorded under its source key is shown in full by
// the next view, exactly as stored, and the log then names the entry.
func TestViewShowsRestoredSource(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	s.turn(0, 600, 1000, false)
	s.add(`"role":"user","content":[{"type":"text","text":"run it"}]`)
	s.add(`"role":"assistant","content":[{"type":"toolCall","id":"call_9","name":"exec","arguments":{"command":"cat big"}}],"provider":"anthropic","model":"m","usage":{"input":2000,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":2010},"stopReason":"toolUse"`)
	holder := `[{"type":"text","text":"[[extracted-tc-call_9]] BrainSurgeon stored this exec result outside the transcript."}]`
	rid := s.add(`"role":"toolResult","toolCallId":"call_9","toolName":"exec","content":` + holder + `,"isError":false`)
	s.turn(1, 600, 3000, false)
	s.write()
	st, ref := openStore(t, s.path)
	side := sidedir.New(st)
	content := []byte(`[{"type":"text","text":` + text(5000, 9) + `}]`)
	rec := &extract.Record{Session: ref.String(), EntryID: "tc-call_9", TriggerType: string(bs.TriggerToolResult), ExtractedAt: clock}
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, content, []byte(holder), clock))
	if _, err := extract.SaveRecord(ctx, side, ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := side.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, st, testPolicy())
	e.Side = side
	if err := e.RecordRestore(ctx, ref, "tc-call_9", clock); err != nil {
		t.Fatal(err)
	}
	host := skeleton(t, s.path)
	k := slicesIndex(host, rid)
	v, err := e.Assemble(ctx, ref, request(host, 0))
	if err != nil {
		t.Fatal(err)
	}
	var got json.RawMessage
	for _, r := range v.Replace {
		if r.Index == k {
			got = r.Content
		}
	}
	if !bytes.Equal(got, content) {
		t.Fatalf("the view shows\n%.200s\nwant the stored content\n%.200s", got, content)
	}
	log, _ := e.Restores(ctx, ref)
	if !log[rid].Equal(clock) || !log["tc-call_9"].IsZero() {
		t.Errorf("restore log %v: want the entry %s, not the source key", log, rid)
	}
}
