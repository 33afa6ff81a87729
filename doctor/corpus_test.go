package doctor_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// lineInfo is what the corruption needs of a transcript line.
type lineInfo struct {
	ID       string `json:"id"`
	ParentID string `json:"parentId"`
	Message  struct {
		Role       string `json:"role"`
		StopReason string `json:"stopReason"`
	} `json:"message"`
}

// corrupt damages a copy of a transcript the ways crashes and aborts do,
// on its active path: the first assistant message with tool calls and
// results gets stopReason "aborted" (its results become orphans), the
// next one loses its last result (a missing result; the entry after it is
// re-parented), and a tool result naming no call is inserted after a later
// user message. It returns the corrupted bytes and how many of the three
// it made. When it made fewer and the active path has a compaction, it
// adds a tool call right after the compaction's first kept entry whose
// result comes only after the compaction (a displaced result, whose fix
// moves it into the kept part) and reports kept.
func corrupt(t *testing.T, st bs.Store, ref bs.SessionRef, data []byte) (out []byte, made int, kept bool) {
	t.Helper()
	tr, err := st.Open(ctx(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header().Version < 2 {
		return nil, 0, false
	}
	nodes, path := tr.Nodes(), tr.ActivePath()
	lines := strings.SplitAfter(string(data), "\n")
	info := func(ni int) lineInfo {
		var li lineInfo
		_ = json.Unmarshal([]byte(lines[nodes[ni].Line-1]), &li)
		return li
	}
	pos := map[int]int{} // node index → position on the path
	for k, p := range path {
		pos[p] = k
	}
	child := func(ni int) int { // the next entry on the path, or -1
		if k := pos[ni]; k+1 < len(path) {
			return path[k+1]
		}
		return -1
	}
	reparented := map[int]bool{}
	reparent := func(ni int, parent string) {
		reparented[ni] = true
		l := &lines[nodes[ni].Line-1]
		*l = strings.Replace(*l, fmt.Sprintf(`"parentId":%q`, nodes[ni].ParentID), fmt.Sprintf(`"parentId":%q`, parent), 1)
	}
	msgs := tr.Context().Messages
	aborted, dropped := false, false
	remove := map[int]bool{}
	var insertAfter = -1
	for i := 0; i < len(msgs); i++ {
		a := info(msgs[i])
		if a.Message.Role == "user" && child(msgs[i]) >= 0 && i > 0 {
			insertAfter = msgs[i] // the last such user message
			continue
		}
		if a.Message.Role != "assistant" || a.Message.StopReason != "toolUse" {
			continue
		}
		j := i + 1
		for j < len(msgs) && info(msgs[j]).Message.Role == "toolResult" {
			j++
		}
		if j == i+1 || j >= len(msgs) {
			continue
		}
		switch {
		case !aborted:
			l := &lines[nodes[msgs[i]].Line-1]
			*l = strings.Replace(*l, `"stopReason":"toolUse"`, `"stopReason":"aborted"`, 1)
			aborted = true
			made++
		case !dropped:
			last := msgs[j-1]
			if c := child(last); c >= 0 {
				reparent(c, nodes[last].ParentID)
				remove[nodes[last].Line] = true
				dropped = true
				made++
			}
		}
		i = j - 1
	}
	if insertAfter >= 0 {
		c := child(insertAfter)
		reparent(c, "0rphan01")
		ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
		l := &lines[nodes[insertAfter].Line-1]
		*l += fmt.Sprintf(`{"type":"message","id":"0rphan01","parentId":%q,"timestamp":%q,"message":{"role":"toolResult","toolCallId":"call_nowhere","toolName":"exec","content":[{"type":"text","text":"lost"}],"isError":false,"timestamp":1767225600000}}`+"\n", nodes[insertAfter].ID, ts)
		made++
	}
	// The call goes right after the first kept entry, its result right
	// before the compaction, with kept messages between them.
	if comp, fk := lastCompaction(nodes, path); made < 3 && comp >= 0 && fk >= 0 && pos[comp]-1 > pos[fk] {
		next, before := child(fk), path[pos[comp]-1]
		if !reparented[next] && !reparented[comp] {
			ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
			reparent(next, "k3pt0001")
			reparent(comp, "k3pt0002")
			lines[nodes[fk].Line-1] += fmt.Sprintf(`{"type":"message","id":"k3pt0001","parentId":%q,"timestamp":%q,"message":{"role":"assistant","content":[{"type":"toolCall","id":"call_kept","name":"exec","arguments":{"command":"ls"}}],"api":"openai-completions","provider":"x","model":"m","stopReason":"toolUse","timestamp":1767225600000}}`+"\n", nodes[fk].ID, ts)
			lines[nodes[before].Line-1] += fmt.Sprintf(`{"type":"message","id":"k3pt0002","parentId":%q,"timestamp":%q,"message":{"role":"toolResult","toolCallId":"call_kept","toolName":"exec","content":[{"type":"text","text":"kept"}],"isError":false,"timestamp":1767225600000}}`+"\n", nodes[before].ID, ts)
			kept = true
		}
	}
	var b strings.Builder
	for i, l := range lines {
		if !remove[i+1] {
			b.WriteString(l)
		}
	}
	return []byte(b.String()), made, kept
}

// lastCompaction returns the node of the last compaction on the active
// path and the node of its first kept entry (-1 when there is none).
func lastCompaction(nodes []bs.Node, path []int) (comp, firstKept int) {
	comp, firstKept = -1, -1
	for _, p := range path {
		if nodes[p].FirstKept() != "" {
			comp = p
		}
	}
	if comp < 0 {
		return -1, -1
	}
	for _, p := range path {
		if nodes[p].ID == nodes[comp].FirstKept() {
			return comp, p
		}
	}
	return -1, -1
}

// TestCorpusRoundTrip corrupts copies of the corpus transcripts, fixes
// them, checks the context pi builds from each, and takes the fix back
// with a pristine restore: byte-identical to the corrupted copy.
func TestCorpusRoundTrip(t *testing.T) {
	oracle.Require(t)
	// The smallest files first, and at most five of them that can be
	// corrupted three ways, to keep the test fast.
	files := testcorpus.Transcripts(t)
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	slices.SortStableFunc(files, func(a, b string) int { return cmp.Compare(size(a), size(b)) })
	tested, real, compactions := 0, 0, 0
	var names []string
	var contexts [][]json.RawMessage
	for _, src := range files {
		if testcorpus.IsFlat(src) || tested >= 5 {
			continue
		}
		t.Run(testcorpus.Name(src), func(t *testing.T) {
			agents, path := testcorpus.Copy(t, src, "c0ffee00-0000-4000-8000-000000000001")
			old := time.Now().Add(-time.Hour)
			st := sidetest.Store(agents)
			r := restore.New(st, sidedir.New(st), config.StateDir(agents))
			doc := &doctor.Doctor{Store: st, Side: sidedir.New(st), Restorer: r}
			ref, err := st.Resolve(ctx(), path)
			if err != nil {
				t.Fatal(err)
			}
			bad, made, kept := corrupt(t, st, ref, read(t, path))
			if made < 3 && !kept {
				t.Skipf("made %d of 3 corruptions (too few tool turns on the active path) and no compaction to corrupt", made)
			}
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			before, err := doc.Diagnose(ctx(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if before.Health != doctor.HealthBroken || (made >= 3 && (before.MissingResults < 1 || before.OrphanResults < 2)) || (kept && before.DisplacedResults < 1) {
				t.Fatalf("diagnosis of the corrupted copy: %s, %d missing, %d orphans, %d displaced: %+v", before.Health, before.MissingResults, before.OrphanResults, before.DisplacedResults, before.Problems)
			}
			res, err := doc.Fix(ctx(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Applied || res.After == nil || res.After.Fixable {
				t.Fatalf("fix: %+v; after %+v", res, res.After)
			}
			if kept && res.Moved < 1 {
				t.Errorf("fix of the displaced result in the compaction's kept part: %+v", res)
			}
			if res.After.Unpaired() == 0 {
				msgs := checkOracle(t, path)
				if kept && !slices.ContainsFunc(msgs, func(m json.RawMessage) bool {
					return bytes.Contains(m, []byte(`"call_kept"`)) && bytes.Contains(m, []byte(`"kept"`))
				}) {
					t.Error("pi's context of the fixed transcript lost the moved result of the compaction's kept part")
				}
				contexts = append(contexts, msgs)
				names = append(names, t.Name())
			}
			if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); !bytes.Equal(got, bad) {
				t.Errorf("restore --all --pristine after the fix is not byte-identical to the corrupted copy (%d bytes, want %d)", len(got), len(bad))
			}
			tested++
			if !testcorpus.IsSelfMade(src) {
				real++
			}
			if kept {
				compactions++
			}
		})
	}
	if tested == 0 || (testcorpus.HasReal(files) && real == 0) || compactions == 0 {
		t.Errorf("%d corpus transcripts (%d real, %d with a compaction) could be corrupted", tested, real, compactions)
	}
	checkOpenClawRepair(t, names, contexts)
}

// TestSQLiteRefused diagnoses the sessions of a copy of a real SQLite
// store and asks Fix to repair each: the fix is refused with the reason
// and the store's bytes do not change.
func TestSQLiteRefused(t *testing.T) {
	agents := testcorpus.Store(t)
	broken := transcript(ln{"u1", "", user("go")}, ln{"a1", "", calls("aborted", "c1")}, ln{"r1", "", result("c1")}, ln{"u2", "", user("again")},
		ln{"a2", "", calls("toolUse", "c2")}, ln{"u3", "", user("more")}, ln{"a3", "", text("done")})
	testcorpus.WriteStore(t, agents, "second", testcorpus.StoreSession{ID: "s1", Rows: strings.Split(strings.TrimSuffix(string(broken), "\n"), "\n")})
	st := sqlite.NewStore(agents, sqlite.Options{})
	db := filepath.Join(agents, "main", testcorpus.StoreFile)
	db2 := filepath.Join(agents, "second", testcorpus.StoreFile)
	before, before2 := read(t, db), read(t, db2)
	refused := 0
	doc := &doctor.Doctor{Store: st}
	refs, _, err := st.Sessions(ctx())
	if err != nil || len(refs) == 0 {
		t.Fatalf("sessions: %d, %v", len(refs), err)
	}
	for _, ref := range refs {
		rep, err := doc.Diagnose(ctx(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Backend != bs.BackendSQLite || rep.Health == "" {
			t.Errorf("%s: %+v", ref, rep)
		}
		res, err := doc.Fix(ctx(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if res.Applied || (rep.Unpaired() > 0) != (res.Refused == doctor.RefusedSQLite) {
			t.Errorf("%s: fix %+v of %+v", ref, res, rep)
		}
		if res.Refused != "" {
			refused++
		}
		if ref.Agent == "second" && (rep.Health != doctor.HealthBroken || rep.MissingResults != 1 || rep.OrphanResults != 1 || rep.FixRefused != doctor.RefusedSQLite) {
			t.Errorf("the broken session of the SQLite store: %+v", rep)
		}
	}
	if refused == 0 {
		t.Error("no fix was refused")
	}
	if !bytes.Equal(read(t, db), before) || !bytes.Equal(read(t, db2), before2) {
		t.Error("the SQLite store changed")
	}
}
