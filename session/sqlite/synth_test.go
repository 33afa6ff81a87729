package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// Stores built by the tests themselves: OpenClaw's real schema (read from
// the smallest corpus store: its DDL only, never a row) and rows the test
// writes, so that a test states every byte it checks.

// schemaDDL returns OpenClaw's schema (testcorpus.StoreSchema: the DDL of
// the smallest corpus store, committed as testdata, no rows).
func schemaDDL(tb testing.TB) []string {
	tb.Helper()
	return testcorpus.StoreSchema()
}

// corpusDDL returns the CREATE statements of the smallest corpus store, in
// creation order, without the tables SQLite makes itself (sqlite_*, and
// the shadow tables of FTS5 virtual tables); tb is skipped without the
// shared directory.
func corpusDDL(tb testing.TB) []string {
	tb.Helper()
	oracle.Shared(tb)
	var src corpusStore
	for _, cs := range corpusStores(tb) {
		if strings.HasPrefix(cs.name, "openclawlaw-cpu") {
			src = cs
		}
	}
	db, err := sql.Open("sqlite", "file://"+src.path+"?mode=ro&immutable=1")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out, virtual []string
	for rows.Next() {
		var typ, name, ddl string
		if err := rows.Scan(&typ, &name, &ddl); err != nil {
			tb.Fatal(err)
		}
		if strings.HasPrefix(name, "sqlite_") {
			continue
		}
		shadow := false
		for _, v := range virtual {
			for _, suffix := range []string{"_data", "_idx", "_content", "_docsize", "_config"} {
				shadow = shadow || name == v+suffix
			}
		}
		if shadow {
			continue
		}
		if typ == "table" && strings.HasPrefix(strings.ToUpper(ddl), "CREATE VIRTUAL TABLE") {
			virtual = append(virtual, name)
		}
		out = append(out, ddl)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestSchemaDDL checks the committed schema against the corpus store it
// was taken from, and its user_version against the one this package reads.
func TestSchemaDDL(t *testing.T) {
	if testcorpus.SchemaVersion != sqlite.SchemaVersion {
		t.Errorf("testcorpus.SchemaVersion = %d, sqlite.SchemaVersion = %d", testcorpus.SchemaVersion, sqlite.SchemaVersion)
	}
	got, want := testcorpus.StoreSchema(), corpusDDL(t)
	if !slices.Equal(got, want) {
		t.Errorf("testdata schema: %d statements, the corpus store %d; regenerate internal/testkit/testcorpus/testdata/openclaw-agent-schema.sql", len(got), len(want))
	}
}

// synthNavigation is the smallest navigation_json the transcript_events
// CHECK accepts; OpenClaw requires one on every zstd row.
const synthNavigation = `{"version":1,"report":{"kind":"canonical"},"navigation":{},"reset":{},"model":{},"modelBytes":0,"modelWithoutCheckpointBytes":0,"withoutCustomDataBytes":0}`

// synthSession is a session a test writes into a store.
type synthSession struct {
	id   string
	rows []string // seq 0 (the header) first
	// zstd lists the seqs stored as event_zstd; badZstd those stored as
	// a damaged zstd frame.
	zstd, badZstd map[int]bool
}

// newSynthStore creates agents/<agent>/agent/openclaw-agent.sqlite under
// agents with OpenClaw's schema, in WAL mode, holding sessions, and
// returns its path. Every session is done, idle and long unchanged.
func newSynthStore(tb testing.TB, agents, agent string, sessions ...synthSession) string {
	tb.Helper()
	dir := filepath.Join(agents, agent, "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(sqlite.StoreFile))
	db, err := sql.Open("sqlite", "file://"+path+"?mode=rwc")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	mustExec(tb, db, "PRAGMA journal_mode=WAL")
	for _, ddl := range schemaDDL(tb) {
		mustExec(tb, db, ddl)
	}
	mustExec(tb, db, "PRAGMA user_version = "+strconv.Itoa(sqlite.SchemaVersion))
	mustExec(tb, db, `INSERT INTO schema_meta(meta_key, role, schema_version, agent_id, app_version, created_at, updated_at)
		VALUES ('primary', 'agent', ?, ?, '2026.9.6', 1, 1)`, sqlite.SchemaVersion, agent)
	addSessions(tb, db, sessions...)
	mustExec(tb, db, "PRAGMA wal_checkpoint(TRUNCATE)")
	return path
}

// addSessions inserts sessions as OpenClaw stores them: a node and a
// window per session (key "agent:<agent>:<id>"), a rewrite watermark,
// and one transcript row per line.
func addSessions(tb testing.TB, db *sql.DB, sessions ...synthSession) {
	tb.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range sessions {
		key := "agent:main:" + s.id
		mustExec(tb, tx, `INSERT INTO session_nodes(session_key, current_session_id, entry_json, updated_at, status) VALUES (?, ?, '{}', 1, 'done')`, key, s.id)
		mustExec(tb, tx, `INSERT INTO session_windows(session_id, session_key, created_at, updated_at, transcript_updated_at) VALUES (?, ?, 1, 1, 1)`, s.id, key)
		mustExec(tb, tx, `INSERT INTO transcript_rewrite_watermarks(session_id, generation, updated_at) VALUES (?, '00000000000000000000000000000000', 1)`, s.id)
		for seq, line := range s.rows {
			var js, z, nav any = line, nil, nil
			switch {
			case s.zstd[seq]:
				js, z, nav = nil, enc.EncodeAll([]byte(line), nil), synthNavigation
			case s.badZstd[seq]:
				// A real frame with a byte of its data and one of its
				// checksum flipped: damaged on disk.
				frame := enc.EncodeAll([]byte(line), nil)
				frame[len(frame)/2] ^= 0xff
				frame[len(frame)-1] ^= 0xff
				js, z, nav = nil, frame, synthNavigation
			}
			mustExec(tb, tx, `INSERT INTO transcript_events(session_id, seq, event_json, event_zstd, event_utf8_bytes, navigation_json, created_at)
				VALUES (?, ?, ?, ?, ?, ?, 1)`, s.id, seq, js, z, len(line), nav)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// Row builders. Ids are short and chained by the caller; times are old.

func synthHeader(id string) string {
	return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work"}`
}

func synthUser(id, parent, text string) string {
	return `{"type":"message","id":"` + id + `","parentId":` + parentJSON(parent) + `,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"` + text + `"}],"timestamp":1767225601000}}`
}

func synthCall(id, parent, call string) string {
	return `{"type":"message","id":"` + id + `","parentId":` + parentJSON(parent) + `,"timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"` + call + `","name":"exec","arguments":{"command":"cat big.txt"}}],"stopReason":"toolUse","timestamp":1767225602000}}`
}

func synthResult(id, parent, call, text string) string {
	return `{"type":"message","id":"` + id + `","parentId":` + parentJSON(parent) + `,"timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"` + call + `","toolName":"exec","content":[{"type":"text","text":"` + text + `"}],"isError":false,"timestamp":1767225603000}}`
}

func synthAnswer(id, parent, text string) string {
	return `{"type":"message","id":"` + id + `","parentId":` + parentJSON(parent) + `,"timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"stopReason":"stop","timestamp":1767225604000}}`
}

func parentJSON(p string) string {
	if p == "" {
		return "null"
	}
	return strconv.Quote(p)
}

// longText returns n bytes of plain text naming tag.
func longText(tag string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s line %d of the tool output. ", tag, i)
	}
	return b.String()[:n]
}

// synthTurns returns a header and n turns (user, tool call, tool result of
// resultLen bytes, answer) of session id: the tool results are old enough
// to extract under keep_recent 1.
func synthTurns(id string, n, resultLen int) []string {
	rows := []string{synthHeader(id)}
	parent := ""
	for k := range n {
		p := fmt.Sprintf("t%d", k)
		rows = append(rows,
			synthUser(p+"u", parent, "question "+strconv.Itoa(k)),
			synthCall(p+"c", p+"u", p+"call"),
			synthResult(p+"r", p+"c", p+"call", longText(id+" "+p, resultLen)),
			synthAnswer(p+"a", p+"r", "answer "+strconv.Itoa(k)))
		parent = p + "a"
	}
	return rows
}
