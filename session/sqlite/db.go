package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// SchemaVersion is the only OpenClaw agent schema version this package
// reads and writes (PRAGMA user_version and schema_meta.schema_version of
// OpenClaw 2026.8 and 2026.9).
const SchemaVersion = 23

// maxEventBytes is the largest decoded row OpenClaw stores compressed (its
// CHECK on event_utf8_bytes); identity rows may be longer.
const maxEventBytes = 4 << 20

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// storeFile describes a store file as found before it is opened.
type storeFile struct {
	path string
	// wal is true when the header says WAL mode (file format versions 2).
	wal bool
	// walExists and shmExists tell whether the sidecars exist.
	walExists, shmExists bool
	// stat is the file's state before the read, for the check after an
	// immutable read.
	stat os.FileInfo
}

// inspectFile checks that path is a regular file holding a SQLite header
// and finds its journal mode and sidecars. It reads 100 bytes and writes
// nothing.
func inspectFile(path string) (*storeFile, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("store %s does not exist (expected an OpenClaw agent store, agents/<agent>/agent/openclaw-agent.sqlite): %w", path, bs.ErrNotFound)
		}
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("store %s is not a regular file (mode %s), expected a SQLite database: %w", path, st.Mode(), bs.ErrInvalid)
	}
	hdr := make([]byte, 100)
	n, err := io.ReadFull(f, hdr)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("store %s: read header: %w", path, err)
	}
	if n < len(hdr) || !bytes.Equal(hdr[:16], sqliteMagic) {
		return nil, fmt.Errorf("store %s is corrupt or not a SQLite database: expected the 100-byte header starting %q, found %d bytes starting %q: %w",
			path, sqliteMagic[:15], n, printable(hdr[:min(n, 16)]), bs.ErrInvalid)
	}
	sf := &storeFile{path: path, wal: hdr[18] == 2 || hdr[19] == 2, stat: st}
	sf.walExists = exists(path + "-wal")
	sf.shmExists = exists(path + "-shm")
	return sf, nil
}

func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// dsn builds a SQLite URI for path with the given URI parameters.
func dsn(path string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: path, RawQuery: params.Encode()}
	// "file:///abs/path?…": an empty authority, which SQLite accepts.
	return u.String()
}

// conn is one SQLite connection to a store.
type conn struct {
	db   *sql.DB
	c    *sql.Conn
	file *storeFile
	// immutable is true when the connection was opened with immutable=1.
	immutable bool
}

// openRead opens a read-only connection that creates no file and changes
// no byte of the store.
//
// A plain read-only open (mode=ro) of a WAL-mode database that nobody has
// open creates "-wal" and "-shm" beside it, because a WAL reader needs the
// shared-memory index. So:
//
//   - WAL header, no "-wal" file: no connection has the database open (the
//     last connection to close checkpoints and deletes the sidecars), so
//     the main file holds every committed transaction. It is opened with
//     immutable=1, which reads the file without locks or sidecars. Since
//     "immutable" is a promise that nobody writes meanwhile, the caller
//     checks afterwards with [conn.verify] that the file was not modified
//     and that no "-wal" appeared; if one did, the host opened the store
//     during the read, and the read is retried the other way.
//   - WAL header, "-wal" and "-shm" present: the host has the database
//     open (or crashed with it open). A mode=ro connection uses the
//     existing shared-memory file as an ordinary reader, which is exactly
//     what SQLite's WAL protocol is for; it creates nothing (the host could
//     close in between and remove the sidecars, in which case SQLite
//     recreates them as any reader would and removes them when done; this
//     window is a few microseconds wide).
//   - WAL header, "-wal" without "-shm": a connection in exclusive locking
//     mode holds the store (it keeps the WAL index in its own memory and
//     keeps every other reader out), or one crashed with it open; reading
//     it would need a new "-shm", so it is refused as busy.
//   - rollback-journal header (OpenClaw on network file systems): mode=ro
//     takes a shared lock and creates nothing.
//
// query_only=1 and trusted_schema=0 are set as OpenClaw's own inspection
// connections do.
func openRead(ctx context.Context, path string, busy time.Duration) (*conn, error) {
	sf, err := inspectFile(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	immutable := false
	switch {
	case sf.wal && !sf.walExists:
		q.Set("immutable", "1")
		q.Set("mode", "ro")
		immutable = true
	case sf.wal && !sf.shmExists:
		return nil, fmt.Errorf("store %s: expected %s-wal and %s-shm together, found the -wal alone (a connection holds the store in exclusive locking mode, or one crashed with it open); reading it would create the shared-memory file, so it is left alone until OpenClaw opens it normally: %w",
			path, path, path, bs.ErrBusy)
	default:
		q.Set("mode", "ro")
	}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "trusted_schema(0)")
	c, err := connect(ctx, sf, dsn(path, q))
	if err != nil {
		return nil, err
	}
	c.immutable = immutable
	return c, nil
}

// openWrite opens a read-write connection: mode=rw never creates the
// database, foreign_keys is on and busy_timeout set as OpenClaw's own
// connections do. journal_mode is left as the store has it.
func openWrite(ctx context.Context, path string, busy time.Duration) (*conn, error) {
	sf, err := inspectFile(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("mode", "rw")
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "trusted_schema(0)")
	return connect(ctx, sf, dsn(path, q))
}

func connect(ctx context.Context, sf *storeFile, name string) (*conn, error) {
	db, err := sql.Open("sqlite", name)
	if err != nil {
		return nil, fmt.Errorf("store %s: open: %w", sf.path, err)
	}
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, storeError(sf.path, "open", err)
	}
	return &conn{db: db, c: c, file: sf}, nil
}

// close closes the connection.
func (c *conn) close() {
	c.c.Close()
	c.db.Close()
}

// verify checks, after an immutable read, that the store file was not
// modified during the read and that no "-wal" appeared. It returns an
// error wrapping errRetry when the read must be repeated.
func (c *conn) verify() error {
	if !c.immutable {
		return nil
	}
	st, err := os.Stat(c.file.path)
	if err != nil {
		return fmt.Errorf("store %s: %w", c.file.path, err)
	}
	b := c.file.stat
	if !os.SameFile(st, b) || st.Size() != b.Size() || !st.ModTime().Equal(b.ModTime()) || exists(c.file.path+"-wal") {
		return fmt.Errorf("store %s was opened or modified by another process while it was read: %w", c.file.path, errRetry)
	}
	return nil
}

// errRetry marks a read that saw the store change under an immutable open.
var errRetry = errors.New("read again")

// storeError wraps an error from SQLite with what it means for the caller:
// a locked database wraps ErrBusy, a corrupt one ErrInvalid.
func storeError(path, op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store %s: %s: %w", path, op, err)
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("store %s: %s: the database is locked by another connection (%v): %w", path, op, err, bs.ErrBusy)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("store %s: %s: the database is corrupt or not a SQLite database, expected an intact OpenClaw agent store (%v): %w", path, op, err, bs.ErrInvalid)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("store %s: %s: cannot open the database file (%v): %w", path, op, err, bs.ErrInvalid)
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("store %s: %s: the database is read-only here (%v): %w", path, op, err, bs.ErrUnsupported)
		}
	}
	return fmt.Errorf("store %s: %s: %w", path, op, err)
}

// querier is what both a connection and a transaction offer.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// schemaInfo is what checkSchema learned about a store.
type schemaInfo struct {
	agentID, appVersion string
}

// checkSchema refuses a store that is not an OpenClaw agent store of
// schema version 23. Nothing is written.
func checkSchema(ctx context.Context, q querier, path string) (schemaInfo, error) {
	var uv int64
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&uv); err != nil {
		return schemaInfo{}, storeError(path, "read schema version", err)
	}
	if uv != SchemaVersion {
		hint := "OpenClaw 2026.8 to 2026.9"
		switch {
		case uv > SchemaVersion:
			hint += "; the store was written by a newer OpenClaw: upgrade BrainSurgeon"
		case uv == 0:
			hint += "; user_version 0 means this is not an OpenClaw agent store"
		default:
			hint += "; older stores need `openclaw doctor --fix`"
		}
		return schemaInfo{}, fmt.Errorf("store %s: agent schema version %d is not supported, expected exactly %d (%s); nothing was read or written: %w",
			path, uv, SchemaVersion, hint, bs.ErrUnsupported)
	}
	var role string
	var ver int64
	var agent, app sql.NullString
	err := q.QueryRowContext(ctx, "SELECT role, schema_version, agent_id, app_version FROM schema_meta WHERE meta_key = 'primary'").Scan(&role, &ver, &agent, &app)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return schemaInfo{}, fmt.Errorf("store %s: schema_meta has no 'primary' row, expected role 'agent' version %d: %w", path, SchemaVersion, bs.ErrUnsupported)
	case err != nil:
		return schemaInfo{}, storeError(path, fmt.Sprintf("read schema_meta (expected an OpenClaw agent store of schema %d)", SchemaVersion), err)
	}
	if role != "agent" || ver != SchemaVersion {
		return schemaInfo{}, fmt.Errorf("store %s: schema_meta says role %q version %d, expected role \"agent\" version %d: %w",
			path, role, ver, SchemaVersion, bs.ErrUnsupported)
	}
	return schemaInfo{agentID: agent.String, appVersion: app.String}, nil
}

// decoders decode zstd rows: single standard frames without dictionary.
var decoders = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxEventBytes*2))
})

// decodeRow returns the row's JSON text: event_json, or event_zstd
// decoded, appended to buf. It checks the decoded size against
// event_utf8_bytes when that is set. A row that cannot be decoded is
// damaged: the error says what was expected and found, and wraps
// ErrInvalid. (A row whose text is not JSON is no error here: it is kept
// as a malformed line.)
func decodeRow(buf, eventJSON, eventZstd []byte, jsonNull bool, utf8Bytes sql.NullInt64) ([]byte, error) {
	if !jsonNull {
		return append(buf, eventJSON...), nil
	}
	if eventZstd == nil {
		return nil, fmt.Errorf("the row has neither event_json nor event_zstd, expected one of them: %w", bs.ErrInvalid)
	}
	d, err := decoders()
	if err != nil {
		return nil, err
	}
	start := len(buf)
	out, err := d.DecodeAll(eventZstd, buf)
	if err != nil {
		want := "JSON text"
		if utf8Bytes.Valid {
			want = fmt.Sprintf("%d bytes of JSON text", utf8Bytes.Int64)
		}
		return nil, fmt.Errorf("event_zstd is damaged: expected one zstd frame holding %s, found %d bytes starting %x that do not decode (%v): %w",
			want, len(eventZstd), eventZstd[:min(len(eventZstd), 8)], err, bs.ErrInvalid)
	}
	if utf8Bytes.Valid && int64(len(out)-start) != utf8Bytes.Int64 {
		return nil, fmt.Errorf("event_zstd is damaged: it decodes to %d bytes, expected event_utf8_bytes %d: %w", len(out)-start, utf8Bytes.Int64, bs.ErrInvalid)
	}
	return out, nil
}
