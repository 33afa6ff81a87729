package testcorpus

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
	ID     string
	Source string   // the self-made transcript the rows come from, if any
	Key    string   // the session key; "" means agent:<agent>:<ID>
	Rows   []string // the transcript's lines without line endings, seq 0 (the header) first
	// Status is session_nodes.status: "" leaves it NULL, as OpenClaw's importer does (and as in the stores of
	// the real corpus); "done" marks a session whose last run ended.
	Status string
	// Zstd lists the seqs stored as event_zstd instead of event_json; BadZstd those stored as a damaged zstd
	// frame.
	Zstd, BadZstd map[int]bool
}

// Navigation is the smallest navigation_json the transcript_events CHECK accepts; OpenClaw requires one on every
// zstd row.
const Navigation = `{"version":1,"report":{"kind":"canonical"},"navigation":{},"reset":{},"model":{},"modelBytes":0,"modelWithoutCheckpointBytes":0,"withoutCustomDataBytes":0}`

// WriteStore creates <agentsDir>/<agent>/agent/openclaw-agent.sqlite with OpenClaw's schema ([StoreSchema]), in
// WAL mode, holding sessions, and returns its path. Every session is idle and long unchanged. An error fails tb.
func WriteStore(tb testing.TB, agentsDir, agent string, sessions ...StoreSession) string {
	tb.Helper()
	path, err := CreateStore(agentsDir, agent, sessions...)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// CreateStore is [WriteStore] for code without a testing.TB (an Example): it returns the error.
func CreateStore(agentsDir, agent string, sessions ...StoreSession) (string, error) {
	path := filepath.Join(agentsDir, agent, filepath.FromSlash(StoreFile))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	db, err := sql.Open("sqlite", "file://"+path+"?mode=rwc")
	if err != nil {
		return "", err
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	ctx := context.Background()
	stmts := []string{"PRAGMA journal_mode=WAL"}
	stmts = append(stmts, StoreSchema()...)
	stmts = append(stmts, "PRAGMA user_version = "+strconv.Itoa(SchemaVersion))
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("%.80s: %w", q, err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_meta(meta_key, role, schema_version, agent_id, app_version, created_at, updated_at)
		VALUES ('primary', 'agent', ?, ?, '2026.9.6', 1, 1)`, SchemaVersion, agent); err != nil {
		return "", err
	}
	if err := addSessions(db, agent, sessions...); err != nil {
		return "", err
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return "", err
	}
	return path, db.Close()
}

// AddStoreSessions inserts sessions into an open store as OpenClaw stores them: a node and a window per session,
// a rewrite watermark, and one transcript row per line. An error fails tb.
func AddStoreSessions(tb testing.TB, db *sql.DB, agent string, sessions ...StoreSession) {
	tb.Helper()
	if err := addSessions(db, agent, sessions...); err != nil {
		tb.Fatal(err)
	}
}

func addSessions(db *sql.DB, agent string, sessions ...StoreSession) (err error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	if err != nil {
		return err
	}
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) {
		if err != nil {
			return
		}
		if _, e := tx.ExecContext(ctx, q, args...); e != nil {
			err = fmt.Errorf("%.80s: %w", q, e)
		}
	}
	for _, s := range sessions {
		key := s.Key
		if key == "" {
			key = "agent:" + agent + ":" + s.ID
		}
		var status any
		if s.Status != "" {
			status = s.Status
		}
		exec(`INSERT INTO session_nodes(session_key, current_session_id, entry_json, updated_at, status) VALUES (?, ?, '{}', 1, ?)`, key, s.ID, status)
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
	if err != nil {
		return err
	}
	return tx.Commit()
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
		s := StoreSession{ID: h.ID, Source: f.Name, Rows: rows, Zstd: map[int]bool{}}
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
