package compact_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/compact"
)

// TestStatusCache: a transcript that did not change is served from the
// cache; one that changed (an append, a rewrite that keeps size and
// modification time) is measured again, never served stale.
func TestStatusCache(t *testing.T) {
	ctx := context.Background()
	st, ref := newStore(t, genTranscriptModel(t, "anthropic/claude-sonnet-4-5"))
	tok := compact.Calibrated(nil)
	c := compact.NewStatusCache(0)
	first, err := c.Status(ctx, st, ref, compact.Settings{}, tok)
	if err != nil {
		t.Fatal(err)
	}
	// Unchanged: the same report, also with other settings applied.
	s := compact.DefaultSettings()
	s.ContextWindow = 1000
	again, err := c.Status(ctx, st, ref, s, tok)
	if err != nil {
		t.Fatal(err)
	}
	if again.Tokens != first.Tokens || again.Window != 200_000 {
		t.Errorf("unchanged: %d tokens of %d, want %d of 200,000 (the model's window)", again.Tokens, again.Window, first.Tokens)
	}
	// An append of a turn that records a larger context.
	f, err := os.OpenFile(ref.Path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(`{"type":"message","id":"z1","parentId":"e0000016","timestamp":"2026-03-01T01:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"more"}]}}` + "\n" +
		`{"type":"message","id":"z2","parentId":"z1","timestamp":"2026-03-01T01:00:01.000Z","message":{"role":"assistant","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":90000,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":90010},"content":[{"type":"text","text":"ok"}]}}` + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	appended, err := c.Status(ctx, st, ref, compact.Settings{}, tok)
	if err != nil {
		t.Fatal(err)
	}
	if appended.Tokens < 90000 {
		t.Errorf("after an append: %d tokens, want at least the recorded 90,000 of input", appended.Tokens)
	}
	// A rewrite to the original bytes' size with the same modification
	// time (a new file renamed over the old one).
	b, err := os.ReadFile(ref.Path)
	if err != nil {
		t.Fatal(err)
	}
	swapped := []byte(string(b[:len(b)-len("90010},\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n")]) + "70010},\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n")
	swapped = []byte(replaceLast(string(swapped), `"input":90000`, `"input":70000`))
	tmp := ref.Path + ".tmp"
	if err := os.WriteFile(tmp, swapped, 0o600); err != nil {
		t.Fatal(err)
	}
	now, _ := os.Stat(ref.Path)
	if err := os.Chtimes(tmp, time.Now(), now.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, ref.Path); err != nil {
		t.Fatal(err)
	}
	rewritten, err := c.Status(ctx, st, ref, compact.Settings{}, tok)
	if err != nil {
		t.Fatal(err)
	}
	if rewritten.Tokens >= 90000 || rewritten.Tokens < 70000 {
		t.Errorf("after a rewrite keeping size and time: %d tokens, want the new 70,000 or a little more", rewritten.Tokens)
	}
}

func replaceLast(s, old, new string) string {
	i := len(s) - len(old)
	for ; i >= 0; i-- {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

// TestStatusCacheConcurrent: many requests at once for the same session
// (tabs polling) get the same answer.
func TestStatusCacheConcurrent(t *testing.T) {
	st, ref := newStore(t, genTranscriptModel(t, "anthropic/claude-sonnet-4-5"))
	c := compact.NewStatusCache(1)
	tok := compact.Calibrated(nil)
	want, err := compact.NewStatusCache(0).Status(context.Background(), st, ref, compact.Settings{}, tok)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			r, err := c.Status(context.Background(), st, ref, compact.Settings{}, tok)
			if err == nil && (r.Tokens != want.Tokens || r.Window != want.Window) {
				err = fmt.Errorf("got %d of %d, want %d of %d", r.Tokens, r.Window, want.Tokens, want.Window)
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
