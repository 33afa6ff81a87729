package testcorpus

import (
	_ "embed"
	"strings"
)

//go:embed testdata/openclaw-agent-schema.sql
var schemaSQL string

// SchemaVersion is the user_version of the store [StoreSchema] describes (session/sqlite.SchemaVersion).
const SchemaVersion = 23

// StoreSchema returns the CREATE statements of OpenClaw's per-agent SQLite store (table structure only, no
// rows), in creation order, without the tables SQLite makes itself (sqlite_*, and the shadow tables of FTS5
// virtual tables). A test builds a store of its own from them and writes synthetic rows.
func StoreSchema() []string {
	lines := strings.Split(schemaSQL, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "-- ") {
		i++
	}
	if i < len(lines) && lines[i] == "--" {
		i++
	}
	body := strings.TrimSuffix(strings.Join(lines[i:], "\n"), "\n")
	return strings.Split(body, "\n--\n")
}
