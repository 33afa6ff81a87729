package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/klauspost/compress/zstd"
	"pgregory.net/rapid"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// failer is what the helpers of these tests need of a *testing.T or a
// *rapid.T.
type failer interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// appendStore writes a store with the sessions of ids (a header and two
// turns each) and returns the store, the host's connection to it and the
// refs.
func appendStore(t *testing.T, ids ...string) (*sqlite.Store, *sql.DB, []bs.SessionRef) {
	t.Helper()
	agents := filepath.Join(t.TempDir(), "agents")
	var sessions []testcorpus.StoreSession
	for _, id := range ids {
		sessions = append(sessions, testcorpus.StoreSession{ID: id, Rows: synthTurns(id, 2, 100), Zstd: map[int]bool{2: true}})
	}
	path := testcorpus.WriteStore(t, agents, "main", sessions...)
	st := sqlite.NewStore(agents, sqlite.Options{})
	var refs []bs.SessionRef
	for _, id := range ids {
		ref, err := st.Resolve(context.Background(), "main/"+id)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	return st, rawDB(t, path), refs
}

var appendEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))

// hostExec runs q on the host's connection.
func hostExec(t failer, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// hostAppend appends rows to session id as OpenClaw does (the next seqs,
// transcript_updated_at advanced), compressing those whose index is in z.
func hostAppend(t failer, db *sql.DB, id string, rows []string, z map[int]bool) {
	t.Helper()
	var next int64
	if err := db.QueryRow(`SELECT coalesce(max(seq), -1) + 1 FROM transcript_events WHERE session_id = ?`, id).Scan(&next); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		var js, zs, nav any = r, nil, nil
		if z[i] {
			js, zs, nav = nil, appendEncoder.EncodeAll([]byte(r), nil), testcorpus.Navigation
		}
		hostExec(t, db, `INSERT INTO transcript_events(session_id, seq, event_json, event_zstd, event_utf8_bytes, navigation_json, created_at)
			VALUES (?, ?, ?, ?, ?, ?, 1)`, id, next+int64(i), js, zs, len(r), nav)
	}
	hostTouch(t, db, id)
}

// hostTouch advances the session's transcript_updated_at.
func hostTouch(t failer, db *sql.DB, id string) {
	t.Helper()
	hostExec(t, db, `UPDATE session_windows SET transcript_updated_at = transcript_updated_at + 1 WHERE session_id = ?`, id)
}

// freshRows opens the session afresh and returns its version and every
// row fully parsed, each the caller's to keep (Open's Visitor sees them as
// Entries would yield them, in the same read).
func freshRows(t failer, st *sqlite.Store, ref bs.SessionRef) (bs.Version, []*bs.Entry) {
	t.Helper()
	var out []*bs.Entry
	tr, err := st.Open(context.Background(), ref, &bs.Visitor{Visit: func(e *bs.Entry) error {
		out = append(out, entry.Parse(bytes.Clone(e.Raw), e.Line, e.Offset))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(tr.Nodes()) {
		t.Fatalf("the visitor saw %d rows, the index holds %d", len(out), len(tr.Nodes()))
	}
	return tr.Version(), out
}

// sameRows fails t unless got is want row by row, byte for byte and
// parsed alike.
func sameRows(t failer, got, want []*bs.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows, a fresh Open reads %d", len(got), len(want))
	}
	for i := range want {
		if g, w := got[i], want[i]; !reflect.DeepEqual(g, w) {
			t.Fatalf("row %d: got line %d seq %d %s %q, raw %q; a fresh Open reads line %d seq %d %s %q, raw %q (or they parse apart)",
				i+1, g.Line, g.Offset, g.Kind, g.ID, g.Raw, w.Line, w.Offset, w.Kind, w.ID, w.Raw)
		}
	}
}

// TestReadAppended covers what the fences can tell. A row replaced under
// the same seq without a new generation they cannot, and OpenClaw never
// does it: every replacement rotates the generation.
func TestReadAppended(t *testing.T) {
	turn := synthTurns("s1", 3, 1500)[9:] // the third turn: 4 rows
	cases := []struct {
		name   string
		change func(t *testing.T, db *sql.DB, id string)
		added  int
		err    error
	}{
		{name: "nothing", change: func(*testing.T, *sql.DB, string) {}},
		{name: "only touched", change: func(t *testing.T, db *sql.DB, id string) { hostTouch(t, db, id) }},
		{name: "one row", change: func(t *testing.T, db *sql.DB, id string) { hostAppend(t, db, id, turn[:1], nil) }, added: 1},
		{name: "a turn, some rows compressed", change: func(t *testing.T, db *sql.DB, id string) {
			hostAppend(t, db, id, turn, map[int]bool{1: true, 2: true})
		}, added: 4},
		{name: "in two appends", change: func(t *testing.T, db *sql.DB, id string) {
			hostAppend(t, db, id, turn[:2], nil)
			hostAppend(t, db, id, turn[2:], map[int]bool{0: true})
		}, added: 4},
		{name: "rewritten", change: func(t *testing.T, db *sql.DB, id string) {
			hostExec(t, db, `UPDATE transcript_rewrite_watermarks SET generation = 'ffffffffffffffffffffffffffffffff' WHERE session_id = ?`, id)
			hostTouch(t, db, id)
		}, err: bs.ErrChanged},
		{name: "the last row deleted", change: func(t *testing.T, db *sql.DB, id string) {
			hostExec(t, db, `DELETE FROM transcript_events WHERE session_id = ? AND seq = (SELECT max(seq) FROM transcript_events WHERE session_id = ?)`, id, id)
		}, err: bs.ErrChanged},
		{name: "an old row deleted, two appended", change: func(t *testing.T, db *sql.DB, id string) {
			// As OpenClaw deletes rows: in a replacement, which rotates the
			// generation (the deletion without is TestReadAppendedHiddenDeletion).
			hostExec(t, db, `DELETE FROM transcript_events WHERE session_id = ? AND seq = 3`, id)
			hostExec(t, db, `UPDATE transcript_rewrite_watermarks SET generation = 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee' WHERE session_id = ?`, id)
			hostAppend(t, db, id, turn[:2], nil)
		}, err: bs.ErrChanged},
		{name: "two appended, then base's last row deleted", change: func(t *testing.T, db *sql.DB, id string) {
			var last int64
			if err := db.QueryRow(`SELECT max(seq) FROM transcript_events WHERE session_id = ?`, id).Scan(&last); err != nil {
				t.Fatal(err)
			}
			hostAppend(t, db, id, turn[:2], nil)
			hostExec(t, db, `DELETE FROM transcript_events WHERE session_id = ? AND seq = ?`, id, last)
		}, err: bs.ErrChanged},
		{name: "every row deleted", change: func(t *testing.T, db *sql.DB, id string) {
			hostExec(t, db, `DELETE FROM transcript_events WHERE session_id = ?`, id)
		}, err: bs.ErrChanged},
	}
	// One store, a session per case and one more that grows meanwhile.
	ids := []string{"other"}
	for i := range cases {
		ids = append(ids, fmt.Sprintf("c%d", i))
	}
	st, db, refs := appendStore(t, ids...)
	for i, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ref := refs[i+1]
			base, before := freshRows(t, st, ref)
			tt.change(t, db, ref.ID)
			hostAppend(t, db, "other", turn, nil) // another session's rows change nothing
			got, v, err := bs.ReadAppended(ctx, st, ref, base, len(before))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want one wrapping %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.added {
				t.Fatalf("%d rows appended, want %d", len(got), tt.added)
			}
			fv, fresh := freshRows(t, st, ref)
			sameRows(t, append(before[:len(before):len(before)], got...), fresh)
			if !v.Equal(fv) {
				t.Fatalf("version %s, a fresh Open's %s", v, fv)
			}
			if len(got) == 0 && tt.name == "nothing" && !v.Equal(base) {
				t.Fatalf("nothing appended, version %s, want base %s", v, base)
			}
			again, v2, err := st.ReadAppended(ctx, ref, v, len(fresh))
			if err != nil || len(again) != 0 || !v2.Equal(v) {
				t.Fatalf("second read: %d rows, version %s, error %v; want none, %s, nil", len(again), v2, err, v)
			}
		})
	}
}

// placeholderEdit returns an edit of the last tool result in rows whose
// text is not a placeholder yet (the text replaced by one), and whether
// there is one.
func placeholderEdit(rows []*bs.Entry) (bs.Edit, bool) {
	for _, e := range slices.Backward(rows) {
		if e.Role != "toolResult" || e.ID == "" {
			continue
		}
		for _, v := range e.Strings {
			if toolResultText.MatchString(v.Pointer) && !bytes.Contains(e.Raw[v.Start:v.End], []byte("[[extracted-")) {
				ph, _ := jsontext.AppendQuote(nil, "[[extracted-"+e.ID+"]]")
				return bs.Edit{Line: e.Line, ID: e.ID, Sum: bs.LineSum(e.Raw), Splices: []bs.Splice{{Start: v.Start, End: v.End, With: ph}}}, true
			}
		}
	}
	return bs.Edit{}, false
}

// TestReadAppendedHiddenDeletion pins what ReadAppended, which does not
// count the session's rows, cannot see and who does: a row below base's
// last deleted without a new generation (OpenClaw never does it) goes
// unnoticed by ReadAppended, whose version then differs from Open's in
// the row count, and a write at that version is refused with ErrChanged,
// because the write's fences count the rows.
func TestReadAppendedHiddenDeletion(t *testing.T) {
	ctx := context.Background()
	st, db, refs := appendStore(t, "s1")
	ref := refs[0]
	base, before := freshRows(t, st, ref)
	hostExec(t, db, `DELETE FROM transcript_events WHERE session_id = ? AND seq = 3`, ref.ID)
	hostAppend(t, db, ref.ID, synthTurns("s1", 3, 1500)[9:11], nil)
	got, v, err := st.ReadAppended(ctx, ref, base, len(before))
	if err != nil || len(got) != 2 {
		t.Fatalf("%d rows, error %v; want the 2 appended", len(got), err)
	}
	again, v2, err := st.ReadAppended(ctx, ref, v, len(before)+len(got))
	if err != nil || len(again) != 0 || !v2.Equal(v) {
		t.Fatalf("read again at the version returned: %d rows, version %s, error %v; want none, %s, nil", len(again), v2, err, v)
	}
	fv, fresh := freshRows(t, st, ref)
	if v.Equal(fv) || len(fresh) != len(before)+1 {
		t.Fatalf("version %s, a fresh Open's %s with %d rows; want them apart, %d rows", v, fv, len(fresh), len(before)+1)
	}
	edit, ok := placeholderEdit(fresh)
	if !ok {
		t.Fatal("no tool result to write a placeholder into")
	}
	if err := st.Rewrite(ctx, ref, v, []bs.Edit{edit}, nil); !errors.Is(err, bs.ErrChanged) {
		t.Fatalf("a write at ReadAppended's version: %v, want ErrChanged", err)
	}
	if _, now := freshRows(t, st, ref); !reflect.DeepEqual(now, fresh) {
		t.Fatal("the refused write changed the session")
	}
	if err := st.Rewrite(ctx, ref, fv, []bs.Edit{edit}, nil); err != nil {
		t.Fatalf("the same write at a fresh Open's version: %v", err)
	}
}

func TestReadAppendedInvalid(t *testing.T) {
	ctx := context.Background()
	st, _, refs := appendStore(t, "s1", "s2")
	base, rows := freshRows(t, st, refs[0])
	other, _ := freshRows(t, st, refs[1])
	stat, err := st.Stat(ctx, refs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		ref   bs.SessionRef
		base  bs.Version
		lines int
	}{
		{"zero version", refs[0], bs.Version{}, len(rows)},
		{"a JSONL version", refs[0], bs.NewVersion(bs.BackendJSONL, "1:2:3:4", 3), len(rows)},
		{"another session's version", refs[0], other, len(rows)},
		{"a Stat version", refs[0], stat.Version, len(rows)},
		{"a token cut short", refs[0], bs.NewVersion(bs.BackendSQLite, base.Token()[:len(base.Token())-2], base.Size()), len(rows)},
		{"a miscounted base", refs[0], base, len(rows) + 1},
		{"a JSONL ref", bs.SessionRef{Backend: bs.BackendJSONL, ID: "s1", Agent: "main"}, base, len(rows)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := st.ReadAppended(ctx, tt.ref, tt.base, tt.lines)
			if !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("error %v, want one wrapping ErrInvalid", err)
			}
		})
	}
}

// TestReadAppendedProperty appends random rows (some compressed), writes
// at the versions ReadAppended returns, and makes random changes a reader
// must notice: the rows read so far plus what ReadAppended returns are
// always a fresh Open's rows, byte for byte, and the versions are equal.
// A row deleted below base's last without a new generation, which
// ReadAppended does not see, must make a write at its version fail.
func TestReadAppendedProperty(t *testing.T) {
	st, db, _ := appendStore(t, "s0")
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		n++
		id := fmt.Sprintf("p%d", n)
		testcorpus.AddStoreSessions(t, db, "main", testcorpus.StoreSession{ID: id, Rows: synthTurns(id, 2, 100), Zstd: map[int]bool{3: true}})
		ref, err := st.Resolve(ctx, "main/"+id)
		if err != nil {
			rt.Fatal(err)
		}
		base, have := freshRows(rt, st, ref)
		k := 0
		for step := range rapid.IntRange(1, 8).Draw(rt, "steps") {
			switch rapid.IntRange(0, 8).Draw(rt, fmt.Sprintf("action%d", step)) {
			case 0, 1, 2: // rows
				var rows []string
				z := map[int]bool{}
				for i := range rapid.IntRange(1, 4).Draw(rt, "count") {
					k++
					if rapid.Bool().Draw(rt, "tool result") {
						rows = append(rows, synthResult(fmt.Sprintf("x%d", k), "t1a", "t1call", longText(id, rapid.IntRange(1, 3000).Draw(rt, "len"))))
					} else {
						rows = append(rows, synthAnswer(fmt.Sprintf("x%d", k), "t1a", longText(id, rapid.IntRange(1, 3000).Draw(rt, "len"))))
					}
					z[i] = rapid.Bool().Draw(rt, "zstd")
				}
				hostAppend(rt, db, id, rows, z)
			case 3:
				hostTouch(rt, db, id)
			case 5: // a write at the version read: accepted (it rotates the generation)
				edit, ok := placeholderEdit(have)
				if !ok {
					continue
				}
				if err := st.Rewrite(ctx, ref, base, []bs.Edit{edit}, nil); err != nil {
					rt.Fatalf("step %d: a write at version %s: %v", step, base, err)
				}
				if _, _, err := st.ReadAppended(ctx, ref, base, len(have)); !errors.Is(err, bs.ErrChanged) {
					rt.Fatalf("after a write: error %v, want one wrapping ErrChanged", err)
				}
				base, have = freshRows(rt, st, ref)
				continue
			case 6: // a row below base's last deleted without a new generation, rows appended
				hostExec(rt, db, `DELETE FROM transcript_events WHERE session_id = ? AND seq = ?`, id, have[1+rapid.IntRange(0, len(have)-3).Draw(rt, "deleted")].Offset)
				k++
				hostAppend(rt, db, id, []string{synthResult(fmt.Sprintf("x%d", k), "t1a", "t1call", longText(id, 100))}, nil)
				got, v, err := st.ReadAppended(ctx, ref, base, len(have))
				if err == nil {
					edit, ok := placeholderEdit(append(have, got...))
					if len(got) != 1 || !ok {
						rt.Fatalf("after a hidden deletion: %d rows, want the tool result appended", len(got))
					}
					err = st.Rewrite(ctx, ref, v, []bs.Edit{edit}, nil)
				}
				if !errors.Is(err, bs.ErrChanged) {
					rt.Fatalf("after a hidden deletion: a read and a write at its version, error %v; want one wrapping ErrChanged", err)
				}
				base, have = freshRows(rt, st, ref)
				continue
			case 4: // a change to notice
				switch rapid.IntRange(0, 2).Draw(rt, "change") {
				case 0:
					hostExec(rt, db, `UPDATE transcript_rewrite_watermarks SET generation = ? WHERE session_id = ?`, fmt.Sprintf("%032d", step+1), id)
				case 1: // base's last row
					hostExec(rt, db, `DELETE FROM transcript_events WHERE session_id = ? AND seq = ?`, id, have[len(have)-1].Offset)
				case 2: // an old row as OpenClaw deletes it (a new generation), and more rows than that appended
					hostExec(rt, db, `DELETE FROM transcript_events WHERE session_id = ? AND seq = ?`, id, have[1].Offset)
					hostExec(rt, db, `UPDATE transcript_rewrite_watermarks SET generation = ? WHERE session_id = ?`, fmt.Sprintf("%032d", 100+step), id)
					hostAppend(rt, db, id, []string{synthAnswer("y", "t1a", "after a deletion"), synthAnswer("y2", "t1a", "and another")}, nil)
				}
				hostTouch(rt, db, id)
				if _, _, err := st.ReadAppended(ctx, ref, base, len(have)); !errors.Is(err, bs.ErrChanged) {
					rt.Fatalf("after a change: error %v, want one wrapping ErrChanged", err)
				}
				base, have = freshRows(rt, st, ref)
				continue
			default: // just read
			}
			got, v, err := st.ReadAppended(ctx, ref, base, len(have))
			if err != nil {
				rt.Fatalf("step %d: %v", step, err)
			}
			have = append(have, got...)
			base = v
			fv, fresh := freshRows(rt, st, ref)
			sameRows(rt, have, fresh)
			if !v.Equal(fv) {
				rt.Fatalf("version %s, a fresh Open's %s", v, fv)
			}
		}
	})
}

// BenchmarkReadAppended reads one turn (4 rows, one compressed) appended
// after a session of 1k and of 64k rows: the cost must not grow with the
// session.
func BenchmarkReadAppended(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1 << 10, 64 << 10} {
		const id = "bench"
		rows := synthTurns(id, n/4+1, 2000) // n rows, then the 4 appended
		agents := filepath.Join(b.TempDir(), "agents")
		path := testcorpus.WriteStore(b, agents, "main", testcorpus.StoreSession{ID: id, Rows: rows[:n]})
		st := sqlite.NewStore(agents, sqlite.Options{})
		ref, err := st.Resolve(ctx, "main/"+id)
		if err != nil {
			b.Fatal(err)
		}
		base, have := freshRows(b, st, ref)
		if len(have) != n {
			b.Fatalf("%d rows, want %d", len(have), n)
		}
		hostAppend(b, rawDB(b, path), id, rows[n:n+4], map[int]bool{3: true})
		b.Run(fmt.Sprintf("%dk", n>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, _, err := st.ReadAppended(ctx, ref, base, len(have))
				if err != nil || len(got) != 4 {
					b.Fatalf("%d entries, error %v; want 4", len(got), err)
				}
			}
		})
	}
}
