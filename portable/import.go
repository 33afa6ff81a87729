package portable

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/google/uuid"
)

// Decode reads an export document and validates it strictly: one JSON
// object with exactly the members Document defines, schema_version
// SchemaVersion, a source with a session id and a format version of 2 or
// 3, a created_at time, and a tail of at least one line in which every
// line is one JSON object with a type (not a session header or a leaf
// control line), an id used once, and a parentId naming the line before it
// (the first line's parentId may name an entry of the source). A summary
// must name its entry and a first kept entry that starts the tail.
//
// Every problem is an error wrapping brainsurgeon.ErrInvalid that says
// what was expected and what was found.
func Decode(data []byte) (*Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var x Document
	if err := dec.Decode(&x); err != nil {
		return nil, invalid("expected one JSON object with schema_version, source, created_at, summary, facts and tail: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("expected the document to end after its JSON object, found more data")
	}
	if err := x.Validate(); err != nil {
		return nil, err
	}
	return &x, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("import: %s: %w", fmt.Sprintf(format, args...), bs.ErrInvalid)
}

// tailEntry is what Validate reads of a tail line.
type tailEntry struct {
	Type     *string         `json:"type"`
	ID       *string         `json:"id"`
	ParentID json.RawMessage `json:"parentId"`
}

// Validate checks a document as Decode does (see there).
func (x *Document) Validate() error {
	if x.SchemaVersion != SchemaVersion {
		return invalid("schema_version: expected %d, found %d", SchemaVersion, x.SchemaVersion)
	}
	if x.Source.SessionID == "" {
		return invalid("source.session_id: expected the id of the exported session, found none")
	}
	if x.Source.Version != 2 && x.Source.Version != 3 {
		return invalid("source.version: expected the transcript format version 2 or 3, found %d", x.Source.Version)
	}
	if x.CreatedAt.IsZero() {
		return invalid("created_at: expected the time of the export, found none")
	}
	if len(x.Tail) == 0 {
		return invalid("tail: expected at least one entry line, found none")
	}
	ids := make(map[string]int, len(x.Tail))
	prev := ""
	for k, l := range x.Tail {
		n := k + 1
		t := bytes.TrimSpace(l)
		if len(t) == 0 || t[0] != '{' {
			return invalid("tail line %d: expected a JSON object, found %s", n, clip(t))
		}
		var e tailEntry
		if err := json.Unmarshal(t, &e); err != nil {
			return invalid("tail line %d: expected an entry object, found %s (%v)", n, clip(t), err)
		}
		switch {
		case e.Type == nil || *e.Type == "":
			return invalid("tail line %d: expected a \"type\" string, found none", n)
		case *e.Type == "session":
			return invalid("tail line %d: expected an entry, found a session header (the import writes its own)", n)
		case *e.Type == "leaf":
			return invalid("tail line %d: expected an entry, found a leaf control line", n)
		case e.ID == nil || *e.ID == "":
			return invalid("tail line %d (%s): expected an \"id\" string, found none", n, *e.Type)
		}
		if j, dup := ids[*e.ID]; dup {
			return invalid("tail line %d: id %q already used by tail line %d, expected unique ids", n, *e.ID, j)
		}
		ids[*e.ID] = n
		var parent *string
		if len(e.ParentID) > 0 {
			if err := json.Unmarshal(e.ParentID, &parent); err != nil {
				return invalid("tail line %d (%s): expected \"parentId\" to be a string or null, found %s", n, *e.ID, clip(e.ParentID))
			}
		}
		if k > 0 && (parent == nil || *parent != prev) {
			found := "none"
			if parent != nil {
				found = fmt.Sprintf("%q", *parent)
			}
			return invalid("tail line %d (%s): expected parentId %q (the id of tail line %d), found %s", n, *e.ID, prev, k, found)
		}
		prev = *e.ID
	}
	if s := x.Summary; s != nil {
		first := firstID(x.Tail[0])
		if s.EntryID == "" {
			return invalid("summary.entry_id: expected the id of the compaction entry, found none")
		}
		if s.FirstKeptEntryID != first && s.EntryID != first {
			return invalid("summary.first_kept_entry_id: expected %q (the id of the first tail line), found %q", first, s.FirstKeptEntryID)
		}
	}
	return nil
}

func firstID(l []byte) string {
	var e tailEntry
	if json.Unmarshal(l, &e) != nil || e.ID == nil {
		return ""
	}
	return *e.ID
}

func clip(b []byte) string {
	const n = 60
	if len(b) == 0 {
		return "nothing"
	}
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

// ImportOptions tunes Import and Document.Session.
type ImportOptions struct {
	// ID is the new session's id; empty means a new random uuid.
	ID string
	// Cwd is the new session's working directory; empty means the
	// source's.
	Cwd string
	// Clock times the new header and summary entry; nil means the system
	// clock.
	Clock bs.Clock
}

// Session returns the new session a document imports as: a header whose
// parentSession names the source, the tail lines byte for byte (a line
// spread over several lines is compacted onto one), and, when the
// document has a summary, a compaction entry after the tail carrying it,
// whose firstKeptEntryId is the first tail line. The host then builds the
// context as the summary followed by the tail, as it did in the source.
// The document is validated first (see Decode).
func (x *Document) Session(o ImportOptions) (*NewSession, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	id := o.ID
	if id == "" {
		id = uuid.NewString() // a version 4 uuid, the form of pi's session ids
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = x.Source.Cwd
	}
	now := bs.Now(o.Clock)
	parent := x.Source.Path
	if parent == "" {
		parent = x.Source.Backend + ":" + x.Source.Agent + "/" + x.Source.SessionID
	}
	h, err := newHeader(id, x.Source.Version, now, cwd, parent)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	s := &NewSession{ID: id, Lines: make([][]byte, 0, len(x.Tail)+2)}
	s.Lines = append(s.Lines, h)
	used := map[string]bool{}
	last := ""
	for _, l := range x.Tail {
		l = bytes.TrimSpace(l)
		if bytes.IndexByte(l, '\n') >= 0 || bytes.IndexByte(l, '\r') >= 0 {
			var b bytes.Buffer
			if err := json.Compact(&b, l); err != nil {
				return nil, invalid("tail line: %v", err)
			}
			l = b.Bytes()
		}
		s.Lines = append(s.Lines, l)
		last = firstID(l)
		used[last] = true
	}
	if x.Summary != nil {
		id, err := bs.NewEntryID(func(id string) bool { return used[id] })
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		line, err := summaryEntry(x, id, last, firstID(x.Tail[0]), now)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		s.Lines = append(s.Lines, line)
	}
	return s, nil
}

// importDetail is our part of an imported summary's details.
type importDetail struct {
	Layer        string `json:"layer"`
	Trigger      string `json:"trigger"`
	ImportedFrom string `json:"importedFrom"`
	SummaryOf    string `json:"summaryOf"`
}

func summaryEntry(x *Document, id, parent, firstKept string, now time.Time) ([]byte, error) {
	s := x.Summary
	d := entry.CompactionDetails[importDetail]{ReadFiles: s.ReadFiles, ModifiedFiles: s.ModifiedFiles,
		BrainSurgeon: importDetail{Layer: "import", Trigger: "manual", ImportedFrom: x.Source.Agent + "/" + x.Source.SessionID, SummaryOf: s.EntryID}}
	if d.ReadFiles == nil {
		d.ReadFiles = []string{}
	}
	if d.ModifiedFiles == nil {
		d.ModifiedFiles = []string{}
	}
	return entry.Marshal(entry.Compaction[importDetail]{Type: "compaction", ID: id, ParentID: &parent, Timestamp: bs.FormatTimestamp(now), Summary: s.Text,
		FirstKeptEntryID: firstKept, TokensBefore: s.TokensBefore, Details: d, FromHook: true})
}

// Import validates data (see Decode) and creates the session it imports
// as (see Document.Session) through c as a new session of agent. A
// malformed document is an error wrapping brainsurgeon.ErrInvalid and
// nothing is written; a store that cannot create sessions returns an error
// wrapping ErrUnsupported.
func Import(ctx context.Context, c bs.Store, agent string, data []byte, o ImportOptions) (bs.SessionRef, error) {
	x, err := Decode(data)
	if err != nil {
		return bs.SessionRef{}, err
	}
	s, err := x.Session(o)
	if err != nil {
		return bs.SessionRef{}, err
	}
	return Create(ctx, c, agent, s)
}
