package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
	"github.com/brainsurgeon/brainsurgeon/summarize"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// setStatus sets a session's status in its sessions.json.
func setStatus(t *testing.T, s demo.Session, status string) {
	t.Helper()
	sj := filepath.Join(filepath.Dir(s.Path), "sessions.json")
	data, err := os.ReadFile(sj)
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]map[string]any
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	index[s.Key]["status"] = status
	if data, err = json.Marshal(index); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sj, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// contextTokens returns the chars/4 context size of each session.
func contextTokens(t *testing.T, agents string, ss []demo.Session) []int {
	t.Helper()
	set, err := backend.Open(t.Context(), agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(ss))
	for i, s := range ss {
		tr, err := set.Store.Open(t.Context(), bs.SessionRef{Agent: s.Agent, ID: s.ID, Path: s.Path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := compact.Status(t.Context(), tr, compact.DefaultSettings(), compact.TokenOptions{Tokenizer: tokens.CharsPer4{}})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = st.Tokens
	}
	return out
}

func lastCompaction(t *testing.T, d *daemon.Daemon) *daemon.CompactResult {
	t.Helper()
	r := lastPrune(t, d)
	if r.Compaction == nil {
		t.Fatalf("no compaction in the prune result: %+v", r)
	}
	return r.Compaction
}

var compactLine = regexp.MustCompile(`msg="\[COMPACT\] (\S+) layer (prune|summarize|full) ([\d,]+) → ([\d,]+) tokens"`)

// TestAutoCompaction follows automatic compaction on fake time: a session
// over the thresholds is compacted on the first tick after it went quiet
// (trigger auto, an info line, an audit record), one changed within the
// 300 s quiet period and one whose run is in flight are left for a later
// tick, compacted sessions are not read again, and auto_enabled false
// turns it off.
func TestAutoCompaction(t *testing.T) {
	t.Setenv(summarize.EnvModel, "")
	t.Setenv(summarize.EnvBaseURL, "")
	synctest.Test(t, func(t *testing.T) {
		agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Sessions: 2, Size: 96 << 10})
		if err != nil {
			t.Fatal(err)
		}
		toks := contextTokens(t, agents, sessions)
		// The window puts the biggest context at 94 % and the smallest at 90 %:
		// past the summarize threshold (88 %), under the full one (95 %).
		window := slices.Max(toks) * 100 / 94
		t.Logf("context tokens %v, window %d", toks, window)
		// The sessions record a model whose window the model table knows,
		// so the window comes from the host's config (the cap of
		// agents.defaults.contextTokens), as on a host configured so.
		host := fmt.Sprintf(`{"agents":{"defaults":{"contextTokens":%d}}}`, window)
		if err := os.WriteFile(filepath.Join(filepath.Dir(agents), "openclaw.json"), []byte(host), 0o600); err != nil {
			t.Fatal(err)
		}
		lb := &logBuf{}
		d, err := daemon.Open(t.Context(), daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Logger: lb.logger(), Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		patch := fmt.Sprintf(`{"enabled": false, "compaction": {"auto_enabled": true, "tokenizer": "chars/4", "context_window": %d,
			"summarize_keep_recent": 2000, "prune_min_tool_tokens": 1000000}}`, window)
		if _, err := d.Config().Set(t.Context(), []byte(patch)); err != nil {
			t.Fatal(err)
		}
		quiet, busy := sessions[0], sessions[1]
		if err := os.Chtimes(quiet.Path, time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
		setStatus(t, busy, "running")
		originals := map[string][]byte{}
		for _, s := range sessions {
			originals[s.ID], _ = os.ReadFile(s.Path)
		}

		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.Close() }()
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*time.Minute + time.Second) // 00:02
		synctest.Wait()
		r := lastCompaction(t, d)
		if r.Sessions != 4 || r.Quiet != 1 || r.Refused != 1 || r.Compacted != 2 || r.Failed != 0 || r.TokensSaved <= 0 {
			t.Fatalf("first tick = %+v, want 2 compacted, 1 quiet, 1 busy", r)
		}
		compacted := map[string]bool{}
		for _, m := range compactLine.FindAllStringSubmatch(lb.String(), -1) {
			compacted[m[1]] = true
			if m[2] != "summarize" && m[2] != "full" {
				t.Errorf("log line %q: want the summarize or full layer", m[0])
			}
		}
		for _, s := range sessions[2:] {
			if !compacted[s.Agent+"/"+s.ID] {
				t.Errorf("no [COMPACT] info line for %s/%s in the log:\n%s", s.Agent, s.ID, lb.String())
			}
			now, _ := os.ReadFile(s.Path)
			tail := now[len(originals[s.ID]):]
			if !bytes.HasPrefix(now, originals[s.ID]) || !bytes.Contains(tail, []byte(`"type":"compaction"`)) || !bytes.Contains(tail, []byte(`"trigger":"auto"`)) {
				t.Errorf("%s: no automatic compaction entry appended after the original bytes", s.ID)
			}
		}
		for _, s := range []demo.Session{quiet, busy} {
			if now, _ := os.ReadFile(s.Path); !bytes.Equal(now, originals[s.ID]) {
				t.Errorf("%s was changed though it was not to be compacted yet", s.ID)
			}
		}
		log := lb.String()
		if !strings.Contains(log, "level=DEBUG msg=\"[COMPACT] "+quiet.Agent+"/"+quiet.ID+" changed 2m") ||
			!strings.Contains(log, "level=DEBUG msg=\"[COMPACT] "+busy.Agent+"/"+busy.ID+" refused, tried again on a later tick") {
			t.Errorf("want debug lines for the quiet and the busy session:\n%s", log)
		}
		audit, err := os.ReadFile(filepath.Join(filepath.Dir(agents), ".brainsurgeon", "audit.jsonl"))
		if err != nil || bytes.Count(audit, []byte(`"action":"compact"`)) != 2 {
			t.Errorf("audit log: %v\n%s", err, audit)
		}

		time.Sleep(2 * time.Minute) // 00:04: still quiet, still busy
		synctest.Wait()
		r = lastCompaction(t, d)
		if r.Unchanged != 2 || r.Quiet != 1 || r.Refused != 1 || r.Compacted != 0 {
			t.Fatalf("second tick = %+v, want 2 unchanged, 1 quiet, 1 busy", r)
		}

		setStatus(t, busy, "done")
		time.Sleep(2 * time.Minute) // 00:06: quiet for 6 minutes, idle
		synctest.Wait()
		r = lastCompaction(t, d)
		if r.Unchanged != 2 || r.Quiet != 0 || r.Refused != 0 || r.Compacted != 2 {
			t.Fatalf("third tick = %+v, want the two others compacted", r)
		}
		lines := compactLine.FindAllString(lb.String(), -1)
		if len(lines) != 4 {
			t.Errorf("%d [COMPACT] info lines, want 4", len(lines))
		}
		for _, l := range lines {
			t.Log(l)
		}

		time.Sleep(2 * time.Minute) // 00:08: nothing changed
		synctest.Wait()
		if r = lastCompaction(t, d); r.Unchanged != 4 || r.Checked != 0 || r.Compacted != 0 {
			t.Fatalf("fourth tick = %+v, want every session unchanged", r)
		}

		if _, err := d.Config().Set(t.Context(), []byte(`{"compaction": {"auto_enabled": false}}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if r := lastPrune(t, d); r.Compaction != nil {
			t.Errorf("auto_enabled false: compaction result %+v, want none", r.Compaction)
		}
	})
}
