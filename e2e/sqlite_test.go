//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	brainsurgeon "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	bsprune "github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// enable writes a config beside agents that prunes thinking and tool
// results of minLen bytes or more at once (no quiet period, age or saving
// threshold) and returns it.
func enable(t *testing.T, agents string, minLen int) config.Config {
	t.Helper()
	c := config.Default()
	c.Enabled, c.IdleSeconds, c.MinValueLength, c.MinSavingTokens, c.AgeThresholdHours = true, 0, minLen, 0, 0
	c.TriggerTypes = []string{config.TriggerThinking, config.TriggerToolResult, config.TriggerImage}
	if err := config.Save(agents, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// corpusStores returns the agents dirs of shared/corpus/openclaw-sqlite
// (<repo>/agents), each holding one or more agents' stores.
func corpusStores(t *testing.T) []string {
	t.Helper()
	shared, err := oracle.SharedDir()
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(shared, "corpus", "openclaw-sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(shared, "corpus", "openclaw-sqlite", e.Name(), "agents"))
		}
	}
	if len(out) < 4 {
		t.Fatalf("found %d corpus store dirs, want at least 4", len(out))
	}
	return out
}

// copyStoreState copies the stores of an agents dir into a fresh state
// dir (only the .sqlite files).
func copyStoreState(t *testing.T, agents string) *openclaw.State {
	t.Helper()
	st, err := openclaw.NewState(filepath.Join(t.TempDir(), "state"), openclaw.ConfigOptions{MockURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(agents, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "openclaw-agent.sqlite" {
			return err
		}
		rel, _ := filepath.Rel(agents, p)
		dst := filepath.Join(st.AgentsDir(), rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
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
	return st
}

// TestSQLiteOracleAfterExtraction extracts from a copy of every corpus
// store and asks OpenClaw 2026.9.6's own SessionManager what it builds:
// the same entries, leaf and context messages as before, except exactly
// the messages whose entries we extracted from, each smaller.
func TestSQLiteOracleAfterExtraction(t *testing.T) {
	in := openclaw.Require(t, openclaw.V9)
	e := openclaw.NewEnv(in.Node)
	t.Cleanup(func() {
		if pids := openclaw.KillLeftovers(e.Marker); len(pids) > 0 {
			t.Errorf("processes left over (killed): %v", pids)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	checked := 0
	for _, src := range corpusStores(t) {
		st := copyStoreState(t, src)
		cfg := enable(t, st.AgentsDir(), 300)
		set, err := backend.Open(ctx, st.AgentsDir(), backend.FromConfig(cfg, nil))
		if err != nil {
			t.Fatal(err)
		}
		refs, _, err := set.Store.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]*openclaw.SQLiteContext{}
		for _, ref := range refs {
			if ref.Backend != brainsurgeon.BackendSQLite {
				t.Fatalf("%s: backend %q", ref, ref.Backend)
			}
			if before[ref.ID], err = openclaw.ContextOracle(ctx, e, in, st, ref.Agent, ref.Key, ref.ID); err != nil {
				t.Fatalf("%s: oracle before: %v", ref, err)
			}
		}
		rep, err := bsprune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		for i, ref := range refs {
			sr := rep.Sessions[i]
			if sr.Status == bsprune.StatusError || sr.Status == bsprune.StatusBusy {
				t.Fatalf("%s: %s %s", ref, sr.Status, sr.Note)
			}
			edited := map[int]bool{}
			if sr.Result != nil && sr.Result.Written {
				for _, d := range sr.Result.Details {
					edited[d.Line] = true
				}
			}
			tr, err := set.Store.Open(ctx, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Context()
			// The oracle's messages are ours, after the compaction summary
			// when there is one.
			var want []bool
			if c.Compaction >= 0 {
				want = append(want, false)
			}
			for _, n := range c.Messages {
				want = append(want, edited[tr.Nodes()[n].Line])
			}
			after, err := openclaw.ContextOracle(ctx, e, in, st, ref.Agent, ref.Key, ref.ID)
			if err != nil {
				t.Fatalf("%s: oracle after: %v", ref, err)
			}
			b := before[ref.ID]
			if after.EntryCount != b.EntryCount || len(after.Messages) != len(b.Messages) || *after.LeafID != *b.LeafID {
				t.Fatalf("%s: OpenClaw reads %d entries, %d messages, leaf %s; before %d, %d, %s",
					ref, after.EntryCount, len(after.Messages), *after.LeafID, b.EntryCount, len(b.Messages), *b.LeafID)
			}
			if len(want) != len(b.Messages) {
				t.Fatalf("%s: we count %d context messages, OpenClaw %d", ref, len(want), len(b.Messages))
			}
			differ := 0
			for i := range b.Messages {
				same := b.Messages[i].Sha == after.Messages[i].Sha
				if same == want[i] {
					t.Fatalf("%s: context message %d (%s) changed=%v, but its entry was extracted=%v", ref, i, b.Messages[i].Role, !same, want[i])
				}
				if !same {
					differ++
					if after.Messages[i].Role != b.Messages[i].Role || after.Messages[i].Bytes >= b.Messages[i].Bytes {
						t.Fatalf("%s: message %d: %s %d bytes → %s %d bytes", ref, i, b.Messages[i].Role, b.Messages[i].Bytes, after.Messages[i].Role, after.Messages[i].Bytes)
					}
				}
			}
			t.Logf("%s: %d entries, %d context messages, %d changed by the extraction of %d entries", ref, after.EntryCount, len(b.Messages), differ, len(edited))
			checked++
		}
	}
	if checked < 8 {
		t.Fatalf("checked %d sessions, want all 8 of the corpus", checked)
	}
}

// TestMigrationKeepsPlaceholders is a user's upgrade: BrainSurgeon
// extracted values on a JSONL-era install, then OpenClaw's own importer
// moved the transcripts into its SQLite store. Every placeholder still
// restores from the store; values extracted after a malformed line (which
// the importer drops with the rest of the file) are orphans that verify
// reports.
func TestMigrationKeepsPlaceholders(t *testing.T) {
	in := openclaw.Require(t, openclaw.V9)
	e := openclaw.NewEnv(in.Node)
	t.Cleanup(func() {
		if pids := openclaw.KillLeftovers(e.Marker); len(pids) > 0 {
			t.Errorf("processes left over (killed): %v", pids)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := openclaw.NewState(filepath.Join(t.TempDir(), "state"), openclaw.ConfigOptions{MockURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	const clean, broken = "ea774ff3-e94f-41d2-aba0-a6a1c80697e4", "b4c26dcb-b630-4911-8f01-5b463210db72"
	srcs := map[string]string{}
	for _, p := range testcorpus.Real(t) {
		if id := strings.TrimSuffix(filepath.Base(p), ".jsonl"); id == clean || id == broken {
			srcs[id] = p
		}
	}
	if len(srcs) != 2 {
		t.Fatalf("corpus transcripts: found %v", srcs)
	}
	if _, err := st.Seed("main", "agent:main:main", clean, srcs[clean]); err != nil {
		t.Fatal(err)
	}
	// The second session gets a malformed line two thirds of the way in.
	p, err := st.Seed("main", "agent:main:other", broken, srcs[broken])
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	lines := bytes.SplitAfter(data, []byte("\n"))
	cut := len(lines) * 2 / 3
	var b bytes.Buffer
	for i, l := range lines {
		if i == cut {
			b.WriteString("{\"type\":\"message\",\"id\":\"torn\"\n")
		}
		b.Write(l)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for id := range srcs {
		os.Chtimes(filepath.Join(st.SessionsDir("main"), id+".jsonl"), old, old)
	}

	// JSONL era: extract.
	cfg := enable(t, st.AgentsDir(), 300)
	set, err := backend.Open(ctx, st.AgentsDir(), backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bsprune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	extracted := map[string]int{}
	for _, s := range rep.Sessions {
		if s.Status != bsprune.StatusExtracted {
			t.Fatalf("%s: %s %s", s.Session, s.Status, s.Note)
		}
		extracted[strings.TrimPrefix(s.Session, "main/")] = s.Result.Values
	}

	// OpenClaw's importer. It imports the readable prefix of the torn
	// transcript and says so.
	report, err := openclaw.Import(ctx, e, in, st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(report, []byte("transcript_malformed")) {
		t.Fatalf("the importer did not report the malformed transcript: %.2000s", report)
	}
	for id := range srcs {
		if _, err := os.Stat(filepath.Join(st.SessionsDir("main"), "extracted", id)); err != nil {
			t.Fatalf("the importer moved or removed the side files of %s: %v", id, err)
		}
		// "<key with _ for :>.<sessionId>.jsonl.imported-<ms>", as 2026.9.6 names them.
		archived, _ := filepath.Glob(filepath.Join(st.AgentsDir(), "main", "session-sqlite-import-archive", "*"+id+".jsonl*"))
		if len(archived) == 0 {
			t.Logf("archive dir: %v", listTree(filepath.Join(st.AgentsDir(), "main")))
			t.Fatalf("the original of %s is not under session-sqlite-import-archive/", id)
		}
	}

	// SQLite era: the same side files restore every placeholder.
	set, err = backend.Open(ctx, st.AgentsDir(), backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, ref := range refs {
		if _, ok := srcs[ref.ID]; !ok {
			continue
		}
		seen++
		if ref.Backend != brainsurgeon.BackendSQLite {
			t.Fatalf("%s is served by %q after the import", ref, ref.Backend)
		}
		v, err := restore.Verify(ctx, set.Store, set.Side, ref)
		if err != nil {
			t.Fatal(err)
		}
		if !v.OK() {
			t.Fatalf("%s: %d placeholders lost their value after the import: %+v", ref, len(v.Problems), v.Problems)
		}
		orphans := 0
		for _, o := range v.Orphans {
			if strings.Contains(o.Detail, "is not in the transcript") {
				orphans++
			}
		}
		switch ref.ID {
		case clean:
			if v.Placeholders != extracted[clean] || orphans != 0 {
				t.Fatalf("%s: %d placeholders (extracted %d), %d orphans", ref, v.Placeholders, extracted[clean], orphans)
			}
		case broken:
			if orphans == 0 || v.Placeholders >= extracted[broken] {
				t.Fatalf("%s: %d placeholders of %d extracted, %d orphans: the entries after the malformed line should be orphans",
					ref, v.Placeholders, extracted[broken], orphans)
			}
		}
		res, err := restore.New(set.Store, set.Side, set.StateDir).RestoreAll(ctx, ref, false)
		if err != nil || len(res.Lost) != 0 || res.Values != v.Placeholders {
			t.Fatalf("%s: restore all: %v, %d values back of %d, lost %v", ref, err, res.Values, v.Placeholders, res.Lost)
		}
		tr, err := set.Store.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		for en, err := range tr.Entries(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if extract.IsPlaceholderValue(en.Raw, en.ID) || bytes.Contains(en.Raw, []byte(extract.Placeholder(en.ID))) {
				t.Fatalf("%s line %d still holds its placeholder", ref, en.Line)
			}
		}
		t.Logf("%s: %d placeholders restored from the SQLite store, %d orphans", ref, v.Placeholders, orphans)
	}
	if seen != 2 {
		t.Fatalf("found %d of the 2 sessions in the store", seen)
	}
}

func listTree(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if len(out) > 40 {
		out = out[:40]
	}
	return out
}
