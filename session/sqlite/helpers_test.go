package sqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// corpusStore is one store of shared/corpus/openclaw-sqlite.
type corpusStore struct {
	name  string // "<repo>/<agent>"
	repo  string
	agent string
	path  string
}

// corpusStores returns every store of the shared corpus, or, without the
// shared directory, the self-made store (see selfMadeStore) and records
// that tb ran on it alone.
func corpusStores(tb testing.TB) []corpusStore {
	tb.Helper()
	shared, ok := oracle.SharedOptional(tb)
	if !ok {
		return []corpusStore{selfMadeStore(tb)}
	}
	root := filepath.Join(shared, "corpus", "openclaw-sqlite")
	var out []corpusStore
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() != "openclaw-agent.sqlite" {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		parts := strings.Split(rel, string(filepath.Separator))
		// <repo>/agents/<agent>/agent/openclaw-agent.sqlite
		if len(parts) != 5 {
			return fmt.Errorf("unexpected store path %s", rel)
		}
		out = append(out, corpusStore{name: parts[0] + "/" + parts[2], repo: parts[0], agent: parts[2], path: p})
		return nil
	})
	if err != nil {
		tb.Fatalf("walk %s: %v", root, err)
	}
	if len(out) < 5 {
		tb.Fatalf("corpus %s: found %d stores, want at least 5", root, len(out))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// selfMadeRepo is the repo name of the self-made store.
const selfMadeRepo = "selfmade"

// selfMadeStore writes the self-made store (testcorpus.SelfMadeStoreSessions:
// the v3 transcripts of the self-made corpus, every third row zstd) into a
// temporary directory of tb.
func selfMadeStore(tb testing.TB) corpusStore {
	tb.Helper()
	return selfMadeStoreOf(tb, testcorpus.SelfMadeStoreSessions("main"))
}

// selfMadeStoreOf writes a store holding sessions of the self-made corpus
// into a temporary directory of tb.
func selfMadeStoreOf(tb testing.TB, sessions []testcorpus.StoreSession) corpusStore {
	tb.Helper()
	agents := filepath.Join(tb.TempDir(), selfMadeRepo, "agents")
	path := testcorpus.WriteStore(tb, agents, "main", sessions...)
	return corpusStore{name: selfMadeRepo + "/main", repo: selfMadeRepo, agent: "main", path: path}
}

// jsonlOf returns the JSONL transcript a session of a corpus store was
// imported from; for the self-made store, its rows written as a JSONL file
// into a temporary directory of tb.
func jsonlOf(tb testing.TB, cs corpusStore, id string) string {
	tb.Helper()
	if cs.repo == selfMadeRepo {
		for _, s := range testcorpus.SelfMadeStoreSessions(cs.agent) {
			if s.ID == id {
				p := filepath.Join(tb.TempDir(), id+".jsonl")
				if err := os.WriteFile(p, []byte(strings.Join(s.Rows, "\n")+"\n"), 0o600); err != nil {
					tb.Fatal(err)
				}
				return p
			}
		}
		tb.Fatalf("self-made store has no session %s", id)
	}
	shared := oracle.Shared(tb)
	root := filepath.Join(shared, "corpus", "openclaw", cs.repo)
	var found []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == id+".jsonl" &&
			filepath.Base(filepath.Dir(filepath.Dir(p))) == cs.agent {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		tb.Fatalf("JSONL source of %s/%s: found %v, want exactly one", cs.name, id, found)
	}
	return found[0]
}

// copyStore copies a store into a fresh state dir as
// <state>/agents/<agent>/agent/openclaw-agent.sqlite and returns the
// state dir and the copy's path.
func copyStore(tb testing.TB, src, agent string) (state, path string) {
	tb.Helper()
	state = tb.TempDir()
	dir := filepath.Join(state, "agents", agent, "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	path = filepath.Join(dir, "openclaw-agent.sqlite")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return state, path
}

// rawDB opens a plain read-write connection, as another process (the
// host) would.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=rw&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustExec(tb testing.TB, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string, args ...any) {
	tb.Helper()
	if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
}

func fileSum(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func listDir(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// dumpOthers returns a digest of every row of every ordinary table except
// transcript_events (compared decoded by the caller),
// transcript_rewrite_watermarks and session_windows.transcript_updated_at
// (which a rewrite must change), one string per table.
func dumpOthers(tb testing.TB, path string) map[string]string {
	tb.Helper()
	db := rawDB(tb, path)
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")
	if err != nil {
		tb.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			tb.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	out := map[string]string{}
	for _, t := range tables {
		if t == "transcript_events" || t == "transcript_rewrite_watermarks" {
			continue
		}
		cols := "*"
		if t == "session_windows" {
			cols = allColumnsBut(tb, db, t, "transcript_updated_at")
		}
		rs, err := db.QueryContext(ctx, "SELECT "+cols+" FROM "+t)
		if err != nil {
			tb.Fatalf("dump %s: %v", t, err)
		}
		names, _ := rs.Columns()
		var lines []string
		for rs.Next() {
			vals := make([]any, len(names))
			ptrs := make([]any, len(names))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%q", vals))
		}
		rs.Close()
		sort.Strings(lines)
		h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
		out[t] = fmt.Sprintf("%d rows %x", len(lines), h[:8])
	}
	return out
}

func allColumnsBut(tb testing.TB, db *sql.DB, table, skip string) string {
	rows, err := db.Query("SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			tb.Fatal(err)
		}
		if n != skip {
			cols = append(cols, n)
		}
	}
	return strings.Join(cols, ", ")
}
