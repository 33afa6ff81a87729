package restore_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// sourceCase is a tool result the plugin stored at the source: what the
// tool returned and what the host wrote in its place.
type sourceCase struct {
	call, content, details, phContent, phDetails string
}

func (c sourceCase) key() string { return "tc-" + c.call }

func (c sourceCase) row(id, parent string) string {
	d := ""
	if c.phDetails != "" {
		d = `,"details":` + c.phDetails
	}
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-02-18T09:00:02.000Z","message":{"role":"toolResult","toolCallId":"` + c.call +
		`","toolName":"exec","content":` + c.phContent + d + `,"isError":false,"timestamp":1771405202000}}`
}

// sourceCases: a one-block text result with details (the usual case), and
// a result of two blocks with an image (another shape than its placeholder).
var sourceCases = []sourceCase{
	{call: "call_1", content: `[{"type":"text","text":"a.txt\nb.txt \u00e9\ud83d\ude00 \"q\""}]`, details: `{"exitCode":0,"aggregated":"a.txt\nb.txt"}`,
		phContent: `[{"type":"text","text":"[[extracted-tc-call_1]] BrainSurgeon stored this exec result (12 characters) outside the transcript."}]`,
		phDetails: `{"brainsurgeon":{"key":"tc-call_1","bytes":40,"sha256":"ab"},"exitCode":0}`},
	{call: "call_2", content: `[{"type":"text","text":"see the image"},{"type":"image","data":"AAAA","mimeType":"image/png"}]`,
		phContent: `[{"type":"text","text":"[[extracted-tc-call_2]] BrainSurgeon stored this exec result (13 characters and 1 image) outside the transcript."}]`},
}

func sourceRows() []string {
	rows := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-02-18T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}]}}`,
	}
	parent := "u1"
	for i, c := range sourceCases {
		id := "r" + string(rune('1'+i))
		rows = append(rows, c.row(id, parent))
		parent = id
	}
	return append(rows, `{"type":"message","id":"a1","parentId":"`+parent+`","timestamp":"2026-02-18T09:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`)
}

// sourceSession writes the session s1 of agent main holding sourceRows in
// the backend, busy or idle, stores the source records, and returns the
// set, the ref and a func that makes the session idle.
func sourceSession(t *testing.T, backendName string, busy bool) (*backend.Set, bs.SessionRef, func()) {
	t.Helper()
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	var makeIdle func()
	idle := time.Duration(0)
	switch backendName {
	case bs.BackendJSONL:
		dir := filepath.Join(agents, "main", "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "s1.jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(sourceRows(), "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if busy {
			idle = time.Hour // written just now: within the quiet period
		}
		makeIdle = func() {
			old := time.Now().Add(-2 * time.Hour)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	default:
		status := ""
		if busy {
			status = "running"
		}
		db := testcorpus.WriteStore(t, agents, "main", testcorpus.StoreSession{ID: "s1", Rows: sourceRows(), Status: status})
		makeIdle = func() {
			h, err := sql.Open("sqlite", "file://"+db)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if _, err := h.Exec(`UPDATE session_nodes SET status = 'done'`); err != nil {
				t.Fatal(err)
			}
		}
	}
	set, err := backend.Open(ctx, agents, backend.Options{Idle: idle})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := set.Store.Resolve(ctx, "main/s1")
	if err != nil {
		t.Fatal(err)
	}
	if ref.Backend != backendName {
		t.Fatalf("resolved %s in the %s store, want %s", ref, ref.Backend, backendName)
	}
	now := time.Now()
	for _, c := range sourceCases {
		rec := &extract.Record{Session: ref.String(), EntryID: c.key(), TriggerType: string(bs.TriggerToolResult), ExtractedAt: now}
		rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, []byte(c.content), []byte(c.phContent), now))
		if c.details != "" {
			rec.Put(extract.NewStoredValue(extract.SourceDetailsPath, bs.TriggerToolResult, false, []byte(c.details), []byte(c.phDetails), now))
		}
		if _, err := extract.SaveRecord(ctx, set.Side, ref, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Side.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	return set, ref, makeIdle
}

// rows reads the session's raw lines through the store.
func rows(t *testing.T, st bs.Store, ref bs.SessionRef) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	_, err := st.Open(context.Background(), ref, &bs.Visitor{Visit: func(e *bs.Entry) error {
		if e.ID != "" {
			out[e.ID] = bytes.Clone(e.Raw)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func valueOf(t *testing.T, line []byte, ptr string) string {
	t.Helper()
	s, e, ok := jsonedit.Find(line, ptr)
	if !ok {
		t.Fatalf("no %s in %s", ptr, line)
	}
	return string(line[s:e])
}

// storedContent is the side store's bytes of a source value.
func storedContent(t *testing.T, set *backend.Set, ref bs.SessionRef, key string) string {
	t.Helper()
	rec, err := extract.LoadRecord(context.Background(), set.Side, ref, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := extract.SourceContent(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWriteBackSources writes the tool results stored at the source back
// into their transcripts on both backends: an idle session at once (the
// content byte-identical to the side store's bytes; in the SQLite store
// only what its guard accepts, the rest reported), a busy one queued and
// applied by ApplyPending once the session is idle.
func TestWriteBackSources(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, backend string
		busy          bool
		written       []string
		refused       []string
	}{
		{"JSONLIdle", bs.BackendJSONL, false, []string{"tc-call_1", "tc-call_2"}, nil},
		{"JSONLBusy", bs.BackendJSONL, true, []string{"tc-call_1", "tc-call_2"}, nil},
		{"SQLiteIdle", bs.BackendSQLite, false, []string{"tc-call_1"}, []string{"tc-call_2"}},
		{"SQLiteBusy", bs.BackendSQLite, true, []string{"tc-call_1"}, []string{"tc-call_2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, ref, makeIdle := sourceSession(t, tc.backend, tc.busy)
			r := restore.New(set.Store, set.Side, set.StateDir)
			keys, ids, err := r.SourcePlaceholders(ctx, ref)
			if err != nil || !slices.Equal(keys, []string{"tc-call_1", "tc-call_2"}) || !slices.Equal(ids, []string{"r1", "r2"}) {
				t.Fatalf("SourcePlaceholders = %v %v %v", keys, ids, err)
			}
			before := rows(t, set.Store, ref)
			res, err := r.WriteBackSources(ctx, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.busy {
				if len(res.Written) != 0 || !slices.Equal(res.Queued, []string{"tc-call_1", "tc-call_2"}) || res.Busy == "" {
					t.Fatalf("busy: %+v", res)
				}
				if after := rows(t, set.Store, ref); !mapsEqual(before, after) {
					t.Fatal("a busy session was written")
				}
				pending, _ := r.Pending()
				if len(pending) != 2 || pending[0].Kind != restore.KindRestoreSource {
					t.Fatalf("queue: %+v", pending)
				}
				makeIdle()
				if n, _, err := r.ApplyPending(ctx); err != nil || n != 2 {
					t.Fatalf("ApplyPending = %d, %v", n, err)
				}
				if pending, _ := r.Pending(); len(pending) != 0 {
					t.Fatalf("left queued: %+v", pending)
				}
			} else {
				var refused []string
				for _, x := range res.Refused {
					refused = append(refused, x.Key)
					if x.EntryID == "" || !strings.Contains(x.Reason, "does not accept") {
						t.Errorf("refusal: %+v", x)
					}
				}
				if !slices.Equal(res.Written, tc.written) || !slices.Equal(refused, tc.refused) || len(res.Queued) != 0 {
					t.Fatalf("idle: %+v", res)
				}
			}
			after := rows(t, set.Store, ref)
			for i, c := range sourceCases {
				id := "r" + string(rune('1'+i))
				got := valueOf(t, after[id], "/message/content")
				if slices.Contains(tc.written, c.key()) {
					if want := storedContent(t, set, ref, c.key()); got != want {
						t.Errorf("%s: content %s, want the side store's bytes %s", id, got, want)
					}
					if strings.Contains(string(after[id]), "[[extracted-") || strings.Contains(string(after[id]), `"_restored"`) {
						t.Errorf("%s: left %s", id, after[id])
					}
					// Only the values changed: the rest of the row is as the host wrote it.
					if tc.backend == bs.BackendJSONL && c.details != "" && valueOf(t, after[id], "/message/details") != c.details {
						t.Errorf("%s: details %s, want %s", id, valueOf(t, after[id], "/message/details"), c.details)
					}
				} else if !bytes.Equal(after[id], before[id]) {
					t.Errorf("%s changed though refused:\n%s", id, after[id])
				}
			}
			for _, id := range []string{"u1", "a1"} {
				if !bytes.Equal(after[id], before[id]) {
					t.Errorf("%s changed", id)
				}
			}
			// Again: nothing left to write back but what was refused.
			again, err := r.WriteBackSources(ctx, ref, nil)
			if err != nil || len(again.Written)+len(again.Queued) != 0 || len(again.Refused) != len(tc.refused) {
				t.Fatalf("again: %+v %v", again, err)
			}
		})
	}
}

// TestWriteBackSourcesKeys: named keys select; a key the session holds no
// placeholder of is reported, and one that is not a source key refused.
func TestWriteBackSourcesKeys(t *testing.T) {
	ctx := context.Background()
	set, ref, _ := sourceSession(t, bs.BackendJSONL, false)
	r := restore.New(set.Store, set.Side, set.StateDir)
	res, err := r.WriteBackSources(ctx, ref, []string{"tc-call_2", "tc-nope"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Written, []string{"tc-call_2"}) || len(res.Refused) != 1 || res.Refused[0].Key != "tc-nope" ||
		!strings.Contains(res.Refused[0].Reason, "no placeholder [[extracted-tc-nope]]") {
		t.Fatalf("%+v", res)
	}
	if _, err := r.WriteBackSources(ctx, ref, []string{"r1"}); err == nil || !strings.Contains(err.Error(), "expected a source key") {
		t.Fatalf("entry id as key: %v", err)
	}
}

func mapsEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
