package compact_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// plainCompaction is a compaction found by a plain JSON scan.
type plainCompaction struct {
	id, firstKept string
	at            time.Time
	tokensBefore  int
	summaryChars  int
}

// scanCompactions finds the compactions on the active path of a JSONL
// transcript with a plain JSON scan, independently of package session:
// the leaf is the last line with an id, the path its parentId chain.
// It returns them newest first.
func scanCompactions(t *testing.T, path string) []plainCompaction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type rec struct {
		Type             string `json:"type"`
		ID               string `json:"id"`
		ParentID         string `json:"parentId"`
		Timestamp        string `json:"timestamp"`
		Summary          string `json:"summary"`
		FirstKeptEntryID string `json:"firstKeptEntryId"`
		TokensBefore     int    `json:"tokensBefore"`
		AppendMode       string `json:"appendMode"`
	}
	byID := map[string]rec{}
	leaf := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r rec
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.ID == "" || r.Type == "session" {
			continue
		}
		if r.AppendMode != "" || r.Type == "leaf" {
			t.Fatalf("%s: the plain scan does not follow side appends or leaf lines", path)
		}
		byID[r.ID] = r
		leaf = r.ID
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var out []plainCompaction
	for id := leaf; id != ""; id = byID[id].ParentID {
		r := byID[id]
		if r.Type != "compaction" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, r.Timestamp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, plainCompaction{id: r.ID, firstKept: r.FirstKeptEntryID, at: at, tokensBefore: r.TokensBefore,
			summaryChars: utf8.RuneCountInString(r.Summary)})
	}
	return out
}

// TestHistoryStatusManyCompactions checks history and status on the
// transcripts with the most compactions (the self-made one, and two real
// ones with the shared corpus) against a plain scan.
func TestHistoryStatusManyCompactions(t *testing.T) {
	ctx := context.Background()
	// The many-compaction transcripts and how many compactions each has on its path.
	counts := map[string]int{"29330952-50b3-43df-bbfe-a0e2046f3800.jsonl": 100, "1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl": 29,
		"v3-compactions.jsonl": 15}
	var files []string
	real := 0
	for _, f := range testcorpus.Transcripts(t) {
		if _, ok := counts[filepath.Base(f)]; ok {
			files = append(files, f)
			if !testcorpus.IsSelfMade(f) {
				real++
			}
		}
	}
	if len(files) != 1+real || real != 0 && real != 2 {
		t.Fatalf("found %d of the many-compaction transcripts (%d real), want the self-made one and, with the shared corpus, two real ones", len(files), real)
	}
	for _, f := range files {
		t.Run(testcorpus.Name(f), func(t *testing.T) {
			want := scanCompactions(t, f)
			wantCount := counts[filepath.Base(f)]
			if len(want) != wantCount {
				t.Fatalf("plain scan found %d compactions on the path, the issue says %d", len(want), wantCount)
			}
			st, ref := newStore(t, f)
			tr, err := st.Open(ctx, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			h, err := compact.History(ctx, tr, 0)
			if err != nil {
				t.Fatal(err)
			}
			if h.Compactions != len(want) || len(h.Events) != len(want) || h.Risk != compact.RiskHigh || h.OffPath != 0 {
				t.Fatalf("history: %d compactions, %d events, risk %s, %d off path; want %d, high", h.Compactions, len(h.Events), h.Risk, h.OffPath, len(want))
			}
			for i, ev := range h.Events {
				w := want[i]
				if ev.ID != w.id || !ev.At.Equal(w.at) || ev.TokensBefore != w.tokensBefore || ev.FirstKeptEntryID != w.firstKept ||
					ev.SummaryChars != w.summaryChars || ev.BrainSurgeon {
					t.Errorf("event %d = %+v, want %+v", i, ev, w)
				}
			}
			for i := 1; i < len(h.Events); i++ {
				if h.Events[i].At.After(h.Events[i-1].At) {
					t.Errorf("event %d is newer than event %d: not newest first", i, i-1)
				}
			}
			short, err := compact.History(ctx, tr, 5)
			if err != nil || len(short.Events) != 5 || short.Compactions != len(want) || short.Events[0].ID != want[0].id || short.Events[4].ID != want[4].id {
				t.Errorf("history depth 5: %d events, %d compactions, %v", len(short.Events), short.Compactions, err)
			}
			s, err := compact.Status(ctx, tr, compact.Settings{}, compact.TokenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s.Compactions != len(want) || s.LastCompactionAt == nil || !s.LastCompactionAt.Equal(want[0].at) || s.Risk != compact.RiskHigh ||
				len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "hard limit 5") {
				t.Errorf("status %+v", s)
			}
			// Status counts the context from the latest compaction on.
			if s.Tokens <= 0 {
				t.Errorf("status tokens %d", s.Tokens)
			}
		})
	}
	// The soft warning at 3: a generated transcript compacted three times.
	st, ref := newStore(t, genTranscript(t, 30, 4000))
	sum := &localSummarizer{}
	set := compact.DefaultSettings()
	var res compact.Result
	for _, keep := range []int{12000, 6000, 2000} {
		set.SummarizeKeepRecent = keep
		var err error
		if res, err = compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerSummarize, Summarizer: sum, Settings: set}); err != nil || res.EntryID == "" {
			t.Fatalf("compaction keeping %d tokens: %+v, %v", keep, res, err)
		}
	}
	tr, _ := st.Open(ctx, ref, nil)
	s, _ := compact.Status(ctx, tr, set, compact.TokenOptions{})
	if s.Risk != compact.RiskMedium || len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "soft limit 3") || !strings.Contains(strings.Join(res.Warnings, ";"), "soft limit 3") {
		t.Errorf("after 3 compactions: status %+v, result warnings %q", s, res.Warnings)
	}
	h, _ := compact.History(ctx, tr, 0)
	if h.Compactions != 3 || !h.Events[0].BrainSurgeon || h.Events[0].Layer != compact.LayerSummarize || h.Events[0].Trigger != compact.TriggerManual || h.Events[0].TokensAfter == 0 {
		t.Errorf("history of our compactions: %+v", h)
	}
}
