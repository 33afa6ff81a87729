package backend_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// TestMultiReadAppended checks that Multi hands ReadAppended to the store
// of the session: a line appended to a JSONL transcript and a row appended
// to a SQLite session each come back as the next line, and a version of the
// other store is refused as invalid.
func TestMultiReadAppended(t *testing.T) {
	ctx := context.Background()
	root := testcorpus.SelfMadeStore(t) // agent main has a SQLite store
	dir := filepath.Join(root, "other", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(dir, "j1.jsonl")
	head := `{"type":"session","version":3,"id":"j1","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}` + "\n"
	if err := os.WriteFile(jpath, []byte(head), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := set.Store
	sid := testcorpus.SelfMadeStoreSessions("main")[0].ID
	sref, err := m.Resolve(ctx, "main/"+sid)
	if err != nil {
		t.Fatal(err)
	}
	jref := bs.SessionRef{Backend: bs.BackendJSONL, Agent: "other", ID: "j1", Path: jpath}
	line := `{"type":"message","id":"n1","parentId":null,"timestamp":"2026-07-01T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"new"}]}}`

	type opened struct {
		ref   bs.SessionRef
		base  bs.Version
		lines int
	}
	var sessions []opened
	for _, ref := range []bs.SessionRef{jref, sref} {
		tr, err := m.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, opened{ref, tr.Version(), len(tr.Nodes())})
	}

	// The host appends one line to each.
	f, err := os.OpenFile(jpath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err := sql.Open("sqlite", "file://"+sref.Path+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO transcript_events(session_id, seq, event_json, event_utf8_bytes, created_at)
		SELECT ?1, max(seq) + 1, ?2, length(CAST(?2 AS BLOB)), 1 FROM transcript_events WHERE session_id = ?1`, sid, line); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE session_windows SET transcript_updated_at = transcript_updated_at + 1 WHERE session_id = ?`, sid); err != nil {
		t.Fatal(err)
	}

	for i, s := range sessions {
		t.Run(s.ref.Backend, func(t *testing.T) {
			got, v, err := bs.ReadAppended(ctx, m, s.ref, s.base, s.lines)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || string(got[0].Raw) != line || got[0].Line != s.lines+1 || got[0].ID != "n1" {
				t.Fatalf("appended %d entries (first %+v), want the new line as line %d", len(got), got, s.lines+1)
			}
			tr, err := m.Open(ctx, s.ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Equal(tr.Version()) {
				t.Errorf("version %s, a fresh Open's %s", v, tr.Version())
			}
			other := sessions[1-i]
			if _, _, err := bs.ReadAppended(ctx, m, s.ref, other.base, other.lines); !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("with the other store's version: error %v, want one wrapping ErrInvalid", err)
			}
		})
	}
}
