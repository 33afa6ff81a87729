package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// TestLines checks that Transcript.Lines returns the planned rows byte for
// byte, whether they are dense (one range query a chunk) or sparse (a query
// a row), across chunks and zstd rows, and that a deleted row is an error
// wrapping ErrChanged.
func TestLines(t *testing.T) {
	const id = "5e551011-0000-4000-8000-0000000000b1"
	rows := []string{`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}`}
	parent := "null"
	for i := 1; i <= 1300; i++ {
		eid := fmt.Sprintf("%08x", 0xa0000000+i)
		rows = append(rows, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"m%d %s","timestamp":%d}}`,
			eid, parent, i, strings.Repeat("x", 4000), 1000+i)) // 5 MB: two dense chunks

		parent = `"` + eid + `"`
	}
	every := func(from, step int) []int {
		var out []int
		for l := from; l <= len(rows); l += step {
			out = append(out, l)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		lines   []int
		del     int // a seq deleted after Open (0: none)
		changed bool
	}{
		{"every line", every(1, 1), 0, false},
		{"every other line: dense", every(2, 2), 0, false},
		{"every third line: sparse", every(1, 3), 0, false},
		{"one line", []int{700}, 0, false},
		{"a dense chunk's row deleted", every(1, 1), 900, true},
		{"a skipped row deleted: the fences count rows", every(2, 2), 901, true},
		{"a sparse row deleted", every(1, 3), 901, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			zstd := map[int]bool{}
			for s := 0; s < len(rows); s += 7 {
				zstd[s] = true
			}
			path := testcorpus.WriteStore(t, filepath.Join(state, "agents"), "main", testcorpus.StoreSession{ID: id, Rows: rows, Zstd: zstd})
			st := sqlite.NewStore(state, sqlite.Options{})
			ctx := context.Background()
			tr, err := st.Open(ctx, bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: id}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.del > 0 {
				db, err := sql.Open("sqlite", "file://"+path+"?mode=rw")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(`DELETE FROM transcript_events WHERE session_id = ? AND seq = ?`, id, tc.del); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			k := 0
			var failed error
			for en, err := range tr.Lines(ctx, tc.lines) {
				if err != nil {
					failed = err
					break
				}
				if en.Line != tc.lines[k] || string(en.Raw) != rows[en.Line-1] {
					t.Fatalf("entry %d: line %d %q, want line %d %q", k, en.Line, en.Raw, tc.lines[k], rows[tc.lines[k]-1])
				}
				k++
			}
			switch {
			case tc.changed && !errors.Is(failed, bs.ErrChanged):
				t.Errorf("Lines with seq %d deleted: err = %v, want one wrapping ErrChanged", tc.del, failed)
			case !tc.changed && (failed != nil || k != len(tc.lines)):
				t.Errorf("Lines read %d of %d, err = %v; want all, no error", k, len(tc.lines), failed)
			}
		})
	}
}
