package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// musk is the corpus store with the most zstd rows, all its sessions
// tool-heavy, or, without the shared directory, a self-made store of the
// self-made sessions with tool results (its first session has the key
// agent:main:main).
func musk(tb testing.TB) corpusStore {
	for _, cs := range corpusStores(tb) {
		if strings.HasPrefix(cs.name, "Musk-fanX") {
			return cs
		}
		if cs.repo == selfMadeRepo {
			return selfMadeStoreOf(tb, toolSessions())
		}
	}
	tb.Fatal("Musk-fanX store missing from the corpus")
	return corpusStore{}
}

// toolSessions returns the self-made store sessions with tool results.
func toolSessions() []testcorpus.StoreSession {
	var out []testcorpus.StoreSession
	for _, s := range testcorpus.SelfMadeStoreSessions("main") {
		if slices.ContainsFunc(s.Rows, func(r string) bool { return strings.Contains(r, `"role":"toolResult"`) }) {
			out = append(out, s)
		}
	}
	return out
}

// muskSession is the session of musk's store the tests address by id: the
// big tool-heavy one of the corpus, or the first self-made one.
func muskSession(cs corpusStore) string {
	if cs.repo == selfMadeRepo {
		return toolSessions()[0].ID
	}
	return "d27ecd5a-45f9-41a3-bad1-ddef6a3c79fc"
}

var toolResultText = regexp.MustCompile(`^/message/content/\d+/text$`)

// snapshot is every row of a session, decoded, plus its fences.
type snapshot struct {
	rows       [][]byte
	generation string
	updatedAt  int64
}

func snap(tb testing.TB, path, id string) snapshot {
	tb.Helper()
	st := sqlite.NewStore(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(path)))), sqlite.Options{})
	tr, err := st.Open(context.Background(), bs.SessionRef{Agent: filepath.Base(filepath.Dir(filepath.Dir(path))), ID: id}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	var s snapshot
	for e, err := range tr.Entries(context.Background()) {
		if err != nil {
			tb.Fatal(err)
		}
		s.rows = append(s.rows, bytes.Clone(e.Raw))
	}
	db := rawDB(tb, path)
	if err := db.QueryRow("SELECT generation FROM transcript_rewrite_watermarks WHERE session_id = ?", id).Scan(&s.generation); err != nil {
		tb.Fatal(err)
	}
	if err := db.QueryRow("SELECT transcript_updated_at FROM session_windows WHERE session_id = ?", id).Scan(&s.updatedAt); err != nil {
		tb.Fatal(err)
	}
	db.Close()
	return s
}

func integrityOK(tb testing.TB, path string) {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil {
		tb.Fatal(err)
	}
	if res != "ok" {
		tb.Fatalf("integrity_check: %s", res)
	}
}

// placeholderEdits replaces every toolResult content text of up to max
// rows with a placeholder and returns the edits and, per line, the
// original bytes.
func placeholderEdits(tb testing.TB, st *sqlite.Store, ref bs.SessionRef, max int) (bs.Transcript, []bs.Edit, map[int][]byte) {
	tb.Helper()
	ctx := context.Background()
	var edits []bs.Edit
	orig := map[int][]byte{}
	tr, err := st.Open(ctx, ref, &bs.Visitor{
		Want: func(raw []byte) bool { return bytes.Contains(raw, []byte(`"toolResult"`)) },
		Visit: func(e *bs.Entry) error {
			if len(edits) >= max || e.Role != "toolResult" || e.ID == "" {
				return nil
			}
			sum := bs.LineSum(e.Raw)
			ed := bs.Edit{Line: e.Line, ID: e.ID, Sum: sum}
			for _, v := range e.Strings {
				if toolResultText.MatchString(v.Pointer) && v.Len() > 40 {
					ph, _ := jsontext.AppendQuote(nil, "[[extracted-"+e.ID+"]]")
					ed.Splices = append(ed.Splices, bs.Splice{Start: v.Start, End: v.End, With: ph})
				}
			}
			if len(ed.Splices) > 0 {
				edits = append(edits, ed)
				orig[e.Line] = bytes.Clone(e.Raw)
			}
			return nil
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return tr, edits, orig
}

func TestRewriteRoundTrip(t *testing.T) {
	ctx := context.Background()
	cs := musk(t)
	state, path := copyStore(t, cs.path, cs.agent)
	clock := &fixedClock{t: time.Now()}
	st := sqlite.NewStore(state, sqlite.Options{Clock: clock})
	refs, _, err := st.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		t.Run(ref.ID, func(t *testing.T) {
			before := snap(t, path, ref.ID)
			others := dumpOthers(t, path)
			tr, edits, orig := placeholderEdits(t, st, ref, 12)
			if len(edits) < 3 {
				t.Fatalf("only %d toolResult rows to edit", len(edits))
			}
			zstdEdited := countZstd(t, path, ref.ID, tr, edits)
			if err := st.Rewrite(ctx, ref, tr.Version(), edits, nil); err != nil {
				t.Fatal(err)
			}
			mid := snap(t, path, ref.ID)
			if mid.generation == before.generation || len(mid.generation) != 32 {
				t.Errorf("generation %q after the rewrite, was %q", mid.generation, before.generation)
			}
			if mid.updatedAt <= before.updatedAt {
				t.Errorf("transcript_updated_at %d after the rewrite, was %d", mid.updatedAt, before.updatedAt)
			}
			for _, e := range edits {
				if !bytes.Contains(mid.rows[e.Line-1], []byte("[[extracted-"+e.ID+"]]")) {
					t.Fatalf("line %d holds no placeholder", e.Line)
				}
			}
			// The old version is stale now.
			if err := st.Rewrite(ctx, ref, tr.Version(), edits, nil); !errors.Is(err, bs.ErrChanged) {
				t.Fatalf("rewrite at the old version: %v, want ErrChanged", err)
			}
			// And back.
			clock.add(time.Second)
			tr2, err := st.Open(ctx, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			var back []bs.Edit
			for _, e := range edits {
				cur := mid.rows[e.Line-1]
				sum := bs.LineSum(cur)
				back = append(back, bs.Edit{Line: e.Line, ID: e.ID, Sum: sum, Splices: []bs.Splice{jsonedit.Diff(cur, orig[e.Line])}})
			}
			if err := st.Rewrite(ctx, ref, tr2.Version(), back, nil); err != nil {
				t.Fatal(err)
			}
			after := snap(t, path, ref.ID)
			if len(after.rows) != len(before.rows) {
				t.Fatalf("%d rows after, %d before", len(after.rows), len(before.rows))
			}
			for i := range before.rows {
				if !bytes.Equal(after.rows[i], before.rows[i]) {
					t.Errorf("line %d differs after the round trip", i+1)
				}
			}
			if after.generation == mid.generation || after.updatedAt <= mid.updatedAt {
				t.Errorf("fences not advanced by the second rewrite")
			}
			if got := dumpOthers(t, path); fmt.Sprint(got) != fmt.Sprint(others) {
				for k := range others {
					if got[k] != others[k] {
						t.Errorf("table %s changed: %s -> %s", k, others[k], got[k])
					}
				}
			}
			integrityOK(t, path)
			t.Logf("%d rows edited (%d of them stored as zstd)", len(edits), zstdEdited)
		})
	}
}

// countZstd returns how many edited rows are stored compressed.
func countZstd(tb testing.TB, path, id string, tr bs.Transcript, edits []bs.Edit) int {
	db := rawDB(tb, path)
	defer db.Close()
	n := 0
	for _, e := range edits {
		var z bool
		seq := tr.Nodes()[e.Line-1].Offset
		if err := db.QueryRow("SELECT event_zstd IS NOT NULL FROM transcript_events WHERE session_id = ? AND seq = ?", id, seq).Scan(&z); err != nil {
			tb.Fatal(err)
		}
		if z {
			n++
		}
	}
	return n
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time      { return c.t }
func (c *fixedClock) add(d time.Duration) { c.t = c.t.Add(d) }

// setup copies the Musk-fanX store and opens its first session with
// placeholder edits ready.
func setup(t *testing.T, opts sqlite.Options) (st *sqlite.Store, path string, ref bs.SessionRef, tr bs.Transcript, edits []bs.Edit) {
	t.Helper()
	cs := musk(t)
	state, path := copyStore(t, cs.path, cs.agent)
	st = sqlite.NewStore(state, opts)
	refs, _, err := st.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref = refs[0]
	tr, edits, _ = placeholderEdits(t, st, ref, 3)
	if len(edits) == 0 {
		t.Fatal("nothing to edit")
	}
	return st, path, ref, tr, edits
}

// unchanged checks that a session's rows and fences equal before.
func unchanged(t *testing.T, path, id string, before snapshot) {
	t.Helper()
	after := snap(t, path, id)
	if after.generation != before.generation || after.updatedAt != before.updatedAt || len(after.rows) != len(before.rows) {
		t.Fatalf("fences or row count changed")
	}
	for i := range before.rows {
		if !bytes.Equal(after.rows[i], before.rows[i]) {
			t.Fatalf("line %d changed", i+1)
		}
	}
}

func TestRewriteChanged(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, path, id string, seq int64)
	}{
		{"RowChanged", func(t *testing.T, path, id string, seq int64) {
			// An unfenced edit of the row, as OpenClaw's E3 experiment.
			db := rawDB(t, path)
			mustExec(t, db, `UPDATE transcript_events SET event_json = replace(coalesce(event_json, '{}'), '"toolResult"', '"toolResult" ') , event_zstd = NULL, navigation_json = NULL WHERE session_id = ? AND seq = ?`, id, seq)
			db.Close()
		}},
		{"GenerationRotated", func(t *testing.T, path, id string, _ int64) {
			db := rawDB(t, path)
			mustExec(t, db, `UPDATE transcript_rewrite_watermarks SET generation = 'ffffffffffffffffffffffffffffffff' WHERE session_id = ?`, id)
			db.Close()
		}},
		{"TranscriptUpdatedAtAdvanced", func(t *testing.T, path, id string, _ int64) {
			db := rawDB(t, path)
			mustExec(t, db, `UPDATE session_windows SET transcript_updated_at = transcript_updated_at + 1 WHERE session_id = ?`, id)
			db.Close()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, path, ref, tr, edits := setup(t, sqlite.Options{})
			tt.change(t, path, ref.ID, tr.Nodes()[edits[0].Line-1].Offset)
			before := snap(t, path, ref.ID)
			err := st.Rewrite(context.Background(), ref, tr.Version(), edits, nil)
			if !errors.Is(err, bs.ErrChanged) {
				t.Fatalf("Rewrite: %v, want ErrChanged", err)
			}
			t.Log(err)
			unchanged(t, path, ref.ID, before)
			if _, err := tr.Entry(context.Background(), 1); tt.name != "RowChanged" && !errors.Is(err, bs.ErrChanged) {
				t.Errorf("Entry after a fence change: %v, want ErrChanged", err)
			}
		})
	}
}

func TestRewriteBusy(t *testing.T) {
	const timeout = 300 * time.Millisecond
	st, path, ref, tr, edits := setup(t, sqlite.Options{BusyTimeout: timeout})
	before := snap(t, path, ref.ID)
	sumBefore := fileSum(t, path)
	db := rawDB(t, path)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "BEGIN IMMEDIATE")
	start := time.Now()
	err = st.Rewrite(context.Background(), ref, tr.Version(), edits, nil)
	took := time.Since(start)
	if !errors.Is(err, bs.ErrBusy) {
		t.Fatalf("Rewrite while another connection writes: %v, want ErrBusy", err)
	}
	t.Log(err)
	if took < timeout-50*time.Millisecond || took > timeout+3*time.Second {
		t.Errorf("gave up after %s, busy timeout %s", took, timeout)
	}
	mustExec(t, conn, "ROLLBACK")
	conn.Close()
	db.Close()
	unchanged(t, path, ref.ID, before)
	if got := fileSum(t, path); got != sumBefore {
		t.Errorf("store file changed")
	}
	// Once the other writer is gone the same rewrite goes through.
	if err := st.Rewrite(context.Background(), ref, tr.Version(), edits, nil); err != nil {
		t.Fatalf("Rewrite after the other writer ended: %v", err)
	}
}

func TestIdleRules(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name  string
		idle  time.Duration
		setup func(t *testing.T, state, path string, ref bs.SessionRef)
		busy  string // substring of the error; "" means idle
	}{
		{"Idle", -1, nil, ""},
		{"WindowRunning", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), "UPDATE session_windows SET status = 'running' WHERE session_id = ?", ref.ID)
		}, "session_windows.status running"},
		{"NodeRunning", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), "UPDATE session_nodes SET status = 'running' WHERE session_key = ?", ref.Key)
		}, "session_nodes.status"},
		{"LifecycleRunID", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), `UPDATE session_nodes SET entry_json = json_set(entry_json, '$.lifecycleRunId', 'run-1') WHERE session_key = ?`, ref.Key)
		}, "lifecycleRunId"},
		{"QueuedInput", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), `INSERT INTO session_pending_inputs(input_id, session_key, session_id, idempotency_key, run_id, request_hash, message_json, lifecycle_generation, state, accepted_at)
				VALUES ('in-1', ?, ?, 'k', 'r', 'h', '{}', 'g', 'queued', 1)`, ref.Key, ref.ID)
		}, "queued input"},
		{"Cold", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), `INSERT INTO session_transcript_cold_archives(session_id, generation, archive_name, archive_sha256, event_count, raw_bytes, archive_bytes, last_seq, archived_at, storage)
				VALUES (?, 'g', 'a.jsonl.zst', ?, 1, 1, 1, 1, 1, 'file')`, ref.ID, strings.Repeat("0", 64))
		}, "cold storage"},
		{"LastRunTimedOut", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), `UPDATE session_nodes SET entry_json = json_set(entry_json, '$.status', 'timeout', '$.endedAt', 1790000000000) WHERE session_key = ?`, ref.Key)
		}, `its last run ended "timeout"`},
		{"LastRunKilled", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), "UPDATE session_windows SET status = 'killed' WHERE session_id = ?", ref.ID)
		}, `its last run ended "killed"`},
		{"LastRunEndedWithoutStatus", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), `UPDATE session_nodes SET entry_json = json_set(json_remove(entry_json, '$.status'), '$.endedAt', 1790000000000) WHERE session_key = ?`, ref.Key)
		}, "with no status"},
		{"LastRunDone", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			db := rawDB(t, path)
			mustExec(t, db, `UPDATE session_nodes SET entry_json = json_set(entry_json, '$.status', 'done', '$.endedAt', 1790000000000) WHERE session_key = ?`, ref.Key)
			mustExec(t, db, "UPDATE session_windows SET status = 'done' WHERE session_id = ?", ref.ID)
		}, ""},
		{"LastRunFailed", -1, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), `UPDATE session_nodes SET status = 'failed', entry_json = json_set(entry_json, '$.status', 'failed', '$.endedAt', 1790000000000) WHERE session_key = ?`, ref.Key)
		}, ""},
		{"RecentlyChanged", time.Hour, func(t *testing.T, _, path string, ref bs.SessionRef) {
			mustExec(t, rawDB(t, path), "UPDATE session_windows SET transcript_updated_at = ? WHERE session_id = ?", now.Add(-time.Minute).UnixMilli(), ref.ID)
		}, "it must be idle for 1h0m0s"},
		{"QuietLongEnough", time.Hour, func(t *testing.T, _, path string, ref bs.SessionRef) {
			db := rawDB(t, path)
			mustExec(t, db, "UPDATE session_windows SET transcript_updated_at = ?, updated_at = ? WHERE session_id = ?", now.Add(-2*time.Hour).UnixMilli(), now.Add(-2*time.Hour).UnixMilli(), ref.ID)
			mustExec(t, db, "UPDATE session_nodes SET updated_at = ? WHERE session_key = ?", now.Add(-2*time.Hour).UnixMilli(), ref.Key)
		}, ""},
		{"EmbeddedAgentHoldsStateLock", -1, func(t *testing.T, state, _ string, _ bs.SessionRef) {
			writeStateLock(t, state, os.Getpid(), "agent-embedded")
		}, `role "agent-embedded"`},
		{"GatewayHoldsStateLock", -1, func(t *testing.T, state, _ string, _ bs.SessionRef) {
			writeStateLock(t, state, os.Getpid(), "")
		}, ""},
		{"StaleStateLock", -1, func(t *testing.T, state, _ string, _ bs.SessionRef) {
			writeStateLock(t, state, 1<<30, "sqlite-maintenance")
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, path, ref, tr, edits := setup(t, sqlite.Options{Quiet: tt.idle, Clock: &fixedClock{t: now}})
			state := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(path))))
			if tt.setup != nil {
				tt.setup(t, state, path, ref)
			}
			err := st.CheckIdle(context.Background(), ref)
			if tt.busy == "" {
				if err != nil {
					t.Fatalf("CheckIdle: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, bs.ErrBusy) || !strings.Contains(err.Error(), tt.busy) {
				t.Fatalf("CheckIdle: %v, want ErrBusy saying %q", err, tt.busy)
			}
			before := snap(t, path, ref.ID)
			// The fences moved with the setup; reopen for a fresh base.
			if tr2, err := st.Open(context.Background(), ref, nil); err == nil {
				tr = tr2
			}
			err = st.Rewrite(context.Background(), ref, tr.Version(), edits, nil)
			if !errors.Is(err, bs.ErrBusy) {
				t.Fatalf("Rewrite: %v, want ErrBusy", err)
			}
			unchanged(t, path, ref.ID, before)
		})
	}
}

func writeStateLock(t *testing.T, state string, pid int, role string) {
	t.Helper()
	dir := filepath.Join(state, "tmp", "openclaw-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	payload := fmt.Sprintf(`{"pid":%d,"ownerId":"x","createdAt":"2026-11-21T00:00:00.000Z"`, pid)
	if role != "" {
		payload += fmt.Sprintf(`,"role":%q`, role)
	}
	payload += "}"
	if err := os.WriteFile(filepath.Join(dir, sqlite.StateLockFile), []byte(payload), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRewriteProjectionGuard(t *testing.T) {
	ctx := context.Background()
	st, path, ref, _, _ := setup(t, sqlite.Options{})
	var edit bs.Edit
	tr, err := st.Open(ctx, ref, &bs.Visitor{Visit: func(e *bs.Entry) error {
		if edit.Line != 0 || e.Role != "user" {
			return nil
		}
		for _, v := range e.Strings {
			if strings.HasSuffix(v.Pointer, "/text") && strings.HasPrefix(v.Pointer, "/message/content/") {
				edit = bs.Edit{Line: e.Line, ID: e.ID, Splices: []bs.Splice{{Start: v.Start, End: v.End, With: []byte(`"[[extracted-` + e.ID + `]]"`)}}}
				break
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if edit.Line == 0 {
		t.Fatal("no user text block found")
	}
	before := snap(t, path, ref.ID)
	err = st.Rewrite(ctx, ref, tr.Version(), []bs.Edit{edit}, nil)
	if !errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), edit.ID) {
		t.Fatalf("Rewrite of a user text block: %v, want ErrUnsupported naming the entry", err)
	}
	t.Log(err)
	unchanged(t, path, ref.ID, before)
}

func TestAppendUnsupported(t *testing.T) {
	st := sqlite.NewStore(t.TempDir(), sqlite.Options{})
	err := st.AppendAt(context.Background(), bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: "x"}, bs.Version{}, [][]byte{[]byte(`{}`)})
	if !errors.Is(err, bs.ErrUnsupported) {
		t.Fatalf("AppendAt: %v, want ErrUnsupported", err)
	}
}

// TestRewriteGate checks that the store, which cannot overlap a gate with
// its transaction, keeps the gate's order: the gate first, the rewrite
// only after it succeeded; a failing gate leaves the session as it was.
func TestRewriteGate(t *testing.T) {
	st, path, ref, tr, edits := setup(t, sqlite.Options{})
	before := snap(t, path, ref.ID)
	errSide := errors.New("not durable")
	calls := 0
	err := st.Rewrite(context.Background(), ref, tr.Version(), edits, func() error { calls++; return errSide })
	if !errors.Is(err, errSide) || calls != 1 {
		t.Fatalf("Rewrite with a failing gate: %v after %d calls, want the gate's error after one", err, calls)
	}
	unchanged(t, path, ref.ID, before)
	calls = 0
	if err := st.Rewrite(context.Background(), ref, tr.Version(), edits, func() error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("Rewrite with a gate: %v after %d calls, want success after one", err, calls)
	}
	if after := snap(t, path, ref.ID); after.generation == before.generation {
		t.Error("the rewrite after the gate wrote nothing")
	}
}

// TestRewriteRefusesStructural checks that the store never inserts or
// removes rows: an edit list holding an Insert or a Remove is refused with
// ErrUnsupported, the gate is not called, and nothing is written, not
// even the other edits of the list.
func TestRewriteRefusesStructural(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(e bs.Edit) bs.Edit
	}{
		{"Insert", func(e bs.Edit) bs.Edit {
			return bs.Edit{Line: e.Line, ID: e.ID, Insert: [][]byte{[]byte(`{"type":"message","id":"abcd0001"}`)}}
		}},
		{"InsertAfterSplices", func(e bs.Edit) bs.Edit {
			e.Insert = [][]byte{[]byte(`{"type":"message","id":"abcd0001"}`)}
			return e
		}},
		{"Remove", func(e bs.Edit) bs.Edit { return bs.Edit{Line: e.Line, ID: e.ID, Remove: true} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, path, ref, tr, edits := setup(t, sqlite.Options{})
			before := snap(t, path, ref.ID)
			sum := fileSum(t, path)
			edits = slices.Clone(edits)
			edits[len(edits)-1] = tt.edit(edits[len(edits)-1])
			gated := false
			err := st.Rewrite(context.Background(), ref, tr.Version(), edits, func() error { gated = true; return nil })
			if !errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), "never inserts or removes rows") {
				t.Fatalf("Rewrite: %v, want ErrUnsupported saying why", err)
			}
			if gated {
				t.Error("the gate was called for a refused rewrite")
			}
			unchanged(t, path, ref.ID, before)
			if got := fileSum(t, path); got != sum {
				t.Error("the database file changed")
			}
		})
	}
}
