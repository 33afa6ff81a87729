package testcorpus

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite" // the driver OpenClaw's store is opened with
)

// StoreSession is one session of a store a test writes with [WriteStore].
type StoreSession struct {
	ID   string
	Key  string   // the session key; "" means agent:<agent>:<ID>
	Rows []string // the transcript's lines without line endings, seq 0 (the header) first
	// Zstd lists the seqs stored as event_zstd instead of event_json; BadZstd those stored as a damaged zstd
	// frame.
	Zstd, BadZstd map[int]bool
}

// Navigation is the smallest navigation_json the transcript_events CHECK accepts; OpenClaw requires one on every
// zstd row.
const Navigation = `{"version":1,"report":{"kind":"canonical"},"navigation":{},"reset":{},"model":{},"modelBytes":0,"modelWithoutCheckpointBytes":0,"withoutCustomDataBytes":0}`

// WriteStore creates <agentsDir>/<agent>/agent/openclaw-agent.sqlite with OpenClaw's schema ([StoreSchema]), in
// WAL mode, holding sessions, and returns its path. Every session is done, idle and long unchanged.
func WriteStore(tb testing.TB, agentsDir, agent string, sessions ...StoreSession) string {
	tb.Helper()
	path := filepath.Join(agentsDir, agent, filepath.FromSlash(StoreFile))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file://"+path+"?mode=rwc")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	exec := func(db interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
	}, q string, args ...any) {
		tb.Helper()
		if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
			tb.Fatalf("%.80s: %v", q, err)
		}
	}
	exec(db, "PRAGMA journal_mode=WAL")
	for _, ddl := range StoreSchema() {
		exec(db, ddl)
	}
	exec(db, "PRAGMA user_version = "+strconv.Itoa(SchemaVersion))
	exec(db, `INSERT INTO schema_meta(meta_key, role, schema_version, agent_id, app_version, created_at, updated_at)
		VALUES ('primary', 'agent', ?, ?, '2026.9.6', 1, 1)`, SchemaVersion, agent)
	AddStoreSessions(tb, db, agent, sessions...)
	exec(db, "PRAGMA wal_checkpoint(TRUNCATE)")
	return path
}

// AddStoreSessions inserts sessions into an open store as OpenClaw stores them: a node and a window per session,
// a rewrite watermark, and one transcript row per line.
func AddStoreSessions(tb testing.TB, db *sql.DB, agent string, sessions ...StoreSession) {
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
	defer tx.Rollback()
	exec := func(q string, args ...any) {
		tb.Helper()
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			tb.Fatalf("%.80s: %v", q, err)
		}
	}
	for _, s := range sessions {
		key := s.Key
		if key == "" {
			key = "agent:" + agent + ":" + s.ID
		}
		exec(`INSERT INTO session_nodes(session_key, current_session_id, entry_json, updated_at, status) VALUES (?, ?, '{}', 1, 'done')`, key, s.ID)
		exec(`INSERT INTO session_windows(session_id, session_key, created_at, updated_at, transcript_updated_at) VALUES (?, ?, 1, 1, 1)`, s.ID, key)
		exec(`INSERT INTO transcript_rewrite_watermarks(session_id, generation, updated_at) VALUES (?, '00000000000000000000000000000000', 1)`, s.ID)
		for seq, line := range s.Rows {
			var js, z, nav any = line, nil, nil
			switch {
			case s.Zstd[seq]:
				js, z, nav = nil, enc.EncodeAll([]byte(line), nil), Navigation
			case s.BadZstd[seq]:
				// A real frame with a byte of its data and one of its checksum flipped: damaged on disk.
				frame := enc.EncodeAll([]byte(line), nil)
				frame[len(frame)/2] ^= 0xff
				frame[len(frame)-1] ^= 0xff
				js, z, nav = nil, frame, Navigation
			}
			exec(`INSERT INTO transcript_events(session_id, seq, event_json, event_zstd, event_utf8_bytes, navigation_json, created_at)
				VALUES (?, ?, ?, ?, ?, ?, 1)`, s.ID, seq, js, z, len(line), nav)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// StoreRows returns the lines of a self-made transcript as a store keeps them: without line endings, and without
// the malformed and glued lines (a store row is one JSON event; OpenClaw's importer drops the others).
func StoreRows(data []byte) []string {
	var rows []string
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if len(l) == 0 || !json.Valid(l) {
			continue
		}
		rows = append(rows, string(l))
	}
	return rows
}

// SelfMadeStoreSessions returns the v3 transcripts of the self-made corpus as store sessions (see [StoreRows]),
// every third row zstd-compressed; the first has the key agent:<agent>:main.
func SelfMadeStoreSessions(agent string) []StoreSession {
	var out []StoreSession
	for _, f := range SelfMadeFiles() {
		if !strings.HasPrefix(f.Name, "v3-") {
			continue
		}
		rows := StoreRows(f.Data)
		var h struct{ ID string }
		if err := json.Unmarshal([]byte(rows[0]), &h); err != nil || h.ID == "" {
			panic("testcorpus: self-made " + f.Name + " has no header id")
		}
		s := StoreSession{ID: h.ID, Rows: rows, Zstd: map[int]bool{}}
		if len(out) == 0 {
			s.Key = "agent:" + agent + ":main"
		}
		for seq := 2; seq < len(rows); seq += 3 {
			s.Zstd[seq] = true
		}
		out = append(out, s)
	}
	return out
}

// SelfMadeStore writes a store for agent "main" holding [SelfMadeStoreSessions] into a fresh agents dir and
// returns the agents dir.
func SelfMadeStore(tb testing.TB) (agentsDir string) {
	tb.Helper()
	agentsDir = filepath.Join(tb.TempDir(), "agents")
	WriteStore(tb, agentsDir, "main", SelfMadeStoreSessions("main")...)
	return agentsDir
}
