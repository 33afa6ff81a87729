package extract

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Format identifies BrainSurgeon's side files.
const Format = "brainsurgeon.extracted/1"

// ErrCorrupt means a side file or a value in it cannot be trusted: it does
// not parse, or a value's sha256 does not match.
var ErrCorrupt = errors.New("corrupt side file")

// Record is the content of one side file: the values extracted from one
// entry.
type Record struct {
	// Format is Format for files written by this package and "" for files
	// of the first BrainSurgeon (Legacy is then true).
	Format string `json:"format"`
	// Session names the session ("agent/sessionId").
	Session string `json:"session"`
	// EntryID is the entry's id.
	EntryID string `json:"entry_id"`
	// TriggerType is the entry's detected trigger type.
	TriggerType string `json:"trigger_type"`
	// ExtractedAt is the time of the latest extraction into this record.
	ExtractedAt time.Time `json:"extracted_at"`
	// Values are the extracted values, sorted by path.
	Values []StoredValue `json:"values"`
	// Redactions hold the original bytes of the values of this entry that
	// package restore replaced with a stub when it redacted a restore call
	// (Trigger "redaction", Placeholder the stub's JSON text). Extraction
	// never reads or changes them and a normal restore never puts them
	// back; a pristine restore does.
	Redactions []StoredValue `json:"redactions,omitempty"`
	// Journal records the first change BrainSurgeon made to each of the
	// entry's bookkeeping members ("_restored", "_redacted",
	// "_extractable"), so that a pristine restore can undo it.
	Journal []JournalItem `json:"journal,omitempty"`
	// Legacy is true for a file written by the first BrainSurgeon
	// ({"<key>": value, "__meta": {…}}). Its values carry no hash.
	Legacy bool `json:"-"`
}

// StoredValue is one extracted value.
type StoredValue struct {
	// Path is the value's JSON Pointer in the entry.
	Path string `json:"path"`
	// Trigger is the value's trigger type.
	Trigger string `json:"trigger"`
	// Block is true for a whole content block (an image).
	Block bool `json:"block,omitempty"`
	// Raw is the value's original JSON text, byte for byte, when it is
	// valid UTF-8; RawBase64 holds it otherwise.
	Raw       json.RawMessage `json:"raw,omitempty"`
	RawBase64 string          `json:"raw_base64,omitempty"`
	// SHA256 is the hex sha256 of the original bytes; Size their length.
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
	// Placeholder is the JSON text that replaced the value in the entry.
	Placeholder string `json:"placeholder"`
	// ExtractedAt is when the value was extracted.
	ExtractedAt time.Time `json:"extracted_at"`
}

// JournalItem is the state of one member before BrainSurgeon first changed
// it: absent, or its raw JSON value.
type JournalItem struct {
	// Path is the member's JSON Pointer ("/_restored",
	// "/message/content/2/_redacted").
	Path string `json:"path"`
	// Absent is true when the member did not exist.
	Absent bool `json:"absent,omitempty"`
	// Raw is the member's previous raw JSON value when it is valid UTF-8;
	// RawBase64 holds it otherwise.
	Raw       json.RawMessage `json:"raw,omitempty"`
	RawBase64 string          `json:"raw_base64,omitempty"`
	// Op names the operation that made the change ("restore", "redact",
	// "set_extractable"); At is when.
	Op string    `json:"op"`
	At time.Time `json:"at"`
}

// NewStoredValue records raw (copied) as extracted at path.
func NewStoredValue(path string, trigger bs.TriggerType, block bool, raw, placeholder []byte, at time.Time) StoredValue {
	sum := sha256.Sum256(raw)
	v := StoredValue{Path: path, Trigger: string(trigger), Block: block, SHA256: hex.EncodeToString(sum[:]),
		Size: len(raw), Placeholder: string(placeholder), ExtractedAt: at.UTC()}
	if utf8.Valid(raw) && len(raw) > 0 {
		// The raw JSON value is stored as it is (not as a string holding
		// it): byte-exact, no escaping cost, and readable with jq.
		v.Raw = bytes.Clone(raw)
	} else {
		v.RawBase64 = base64.StdEncoding.EncodeToString(raw)
	}
	return v
}

// Bytes returns the value's original bytes after checking their hash. A
// mismatch is an error wrapping ErrCorrupt.
func (v StoredValue) Bytes() ([]byte, error) {
	raw := []byte(v.Raw)
	if v.RawBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(v.RawBase64)
		if err != nil {
			return nil, fmt.Errorf("value %s: raw_base64: %v: %w", v.Path, err, ErrCorrupt)
		}
		raw = b
	}
	if v.SHA256 == "" {
		return raw, nil // a legacy value: no hash to check
	}
	sum := sha256.Sum256(raw)
	if hex.EncodeToString(sum[:]) != v.SHA256 || (v.Size != 0 && len(raw) != v.Size) {
		return nil, fmt.Errorf("value %s: sha256 %s does not match the stored %s: %w", v.Path, hex.EncodeToString(sum[:8]), shortHash(v.SHA256), ErrCorrupt)
	}
	return raw, nil
}

func shortHash(h string) string {
	if len(h) > 16 {
		return h[:16]
	}
	return h
}

// Value returns the stored value at path.
func (r *Record) Value(path string) (StoredValue, bool) {
	for _, v := range r.Values {
		if v.Path == path {
			return v, true
		}
	}
	return StoredValue{}, false
}

// Put adds or replaces values by path and keeps them sorted.
func (r *Record) Put(vals ...StoredValue) {
	for _, v := range vals {
		replaced := false
		for i := range r.Values {
			if r.Values[i].Path == v.Path {
				r.Values[i], replaced = v, true
			}
		}
		if !replaced {
			r.Values = append(r.Values, v)
		}
	}
	sort.Slice(r.Values, func(i, j int) bool { return r.Values[i].Path < r.Values[j].Path })
}

// RawBytes returns the sum of the values' sizes.
func (r *Record) RawBytes() int64 {
	var n int64
	for _, v := range r.Values {
		n += int64(v.Size)
	}
	return n
}

// SideDir returns the side directory of a session:
// <transcript dir>/extracted/<sessionId>.
func SideDir(transcriptPath, sessionID string) string {
	return filepath.Join(filepath.Dir(transcriptPath), "extracted", sessionID)
}

// SidePaths returns the two names a side file may have.
func SidePaths(dir, entryID string) (plain, compressed string) {
	return filepath.Join(dir, entryID+".json"), filepath.Join(dir, entryID+".json.zst")
}

// ReadRecord reads the side file of an entry (compressed or not, ours or
// the first BrainSurgeon's). A missing file is an error wrapping
// brainsurgeon.ErrNotFound; an unreadable one wraps ErrCorrupt.
func ReadRecord(dir, entryID string) (*Record, string, error) {
	if err := ValidID(entryID); err != nil {
		return nil, "", err
	}
	plain, zst := SidePaths(dir, entryID)
	data, err := os.ReadFile(zst)
	path := zst
	if err == nil {
		dec, derr := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if derr != nil {
			return nil, path, derr
		}
		data, err = dec.DecodeAll(data, nil)
		dec.Close()
		if err != nil {
			return nil, path, fmt.Errorf("side file %s: zstd: %v: %w", path, err, ErrCorrupt)
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		path = plain
		data, err = os.ReadFile(plain)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, path, fmt.Errorf("side file for entry %s in %s: %w", entryID, dir, bs.ErrNotFound)
		}
		return nil, path, fmt.Errorf("side file %s: %w", path, err)
	}
	rec, err := decodeRecord(data)
	if err != nil {
		return nil, path, fmt.Errorf("side file %s: %v: %w", path, err, ErrCorrupt)
	}
	if rec.EntryID == "" {
		rec.EntryID = entryID
	}
	return rec, path, nil
}

func decodeRecord(data []byte) (*Record, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, err
	}
	if _, ok := probe["format"]; ok {
		var r Record
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		if r.Format != Format {
			return nil, fmt.Errorf("format %q, expected %q", r.Format, Format)
		}
		return &r, nil
	}
	// The first BrainSurgeon: {"<key>": value, "__meta": {...}}.
	r := &Record{Legacy: true}
	if m, ok := probe["__meta"]; ok {
		var meta struct {
			ExtractedAt string `json:"extracted_at"`
			TriggerType string `json:"trigger_type"`
		}
		_ = json.Unmarshal(m, &meta)
		r.TriggerType = meta.TriggerType
		r.ExtractedAt, _ = time.Parse(time.RFC3339Nano, meta.ExtractedAt)
	}
	for k, v := range probe {
		if k == "__meta" {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, err
		}
		r.Values = append(r.Values, StoredValue{Path: "/" + escapePointer(k), Trigger: r.TriggerType, Raw: json.RawMessage(buf.Bytes()), Size: buf.Len()})
	}
	sort.Slice(r.Values, func(i, j int) bool { return r.Values[i].Path < r.Values[j].Path })
	return r, nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// SideWriter writes side files. Files are written with a temp file and a
// rename, but not fsynced one by one: call Sync once after a batch, before
// the transcript changes (DESIGN decision 8).
type SideWriter struct {
	// CompressAbove compresses records whose values exceed this many bytes
	// (default 4096; negative never compresses).
	CompressAbove int
	// Existing, when not nil, lists the entry ids that had a side file
	// before this batch; for the others there is no earlier file (of the
	// other name) to remove, which saves a system call per file.
	Existing map[string]bool
	enc      *zstd.Encoder
	dirs     map[string]bool
	buf      bytes.Buffer
}

// Write stores rec in dir, replacing an earlier file of the same entry
// (compressed or not). Directories are created 0700, files 0600.
func (w *SideWriter) Write(dir string, rec *Record) (path string, size int64, err error) {
	if err := ValidID(rec.EntryID); err != nil {
		return "", 0, err
	}
	if w.dirs == nil {
		w.dirs = map[string]bool{}
	}
	if !w.dirs[dir] {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", 0, fmt.Errorf("create side dir: %w", err)
		}
		w.dirs[dir] = true
	}
	rec.Format = Format
	data, err := w.encode(rec)
	if err != nil {
		return "", 0, fmt.Errorf("encode side file: %w", err)
	}
	limit := w.CompressAbove
	if limit == 0 {
		limit = 4096
	}
	plain, zst := SidePaths(dir, rec.EntryID)
	path, other := plain, zst
	if limit >= 0 && rec.RawBytes() > int64(limit) {
		if w.enc == nil {
			w.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
			if err != nil {
				return "", 0, err
			}
		}
		data = w.enc.EncodeAll(data, make([]byte, 0, len(data)/3))
		path, other = zst, plain
	}
	tmp := filepath.Join(dir, ".tmp-"+rec.EntryID+"-"+randHex())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		os.Remove(tmp)
		return "", 0, fmt.Errorf("write side file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", 0, fmt.Errorf("rename side file: %w", err)
	}
	if w.Existing != nil && !w.Existing[rec.EntryID] {
		return path, int64(len(data)), nil // no earlier file to remove
	}
	if err := os.Remove(other); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return path, int64(len(data)), fmt.Errorf("remove old side file: %w", err)
	}
	return path, int64(len(data)), nil
}

// Sync makes every side file written so far durable: one syncfs of the
// file system, then an fsync of each side directory (and its parent, for
// a new directory's entry).
func (w *SideWriter) Sync() error {
	var first string
	for d := range w.dirs {
		first = d
		break
	}
	if first == "" {
		return nil
	}
	f, err := os.Open(first)
	if err != nil {
		return fmt.Errorf("sync side files: %w", err)
	}
	err = unix.Syncfs(int(f.Fd()))
	f.Close()
	if err != nil {
		return fmt.Errorf("sync side files: %w", err)
	}
	for d := range w.dirs {
		for _, p := range []string{d, filepath.Dir(d)} {
			if f, err := os.Open(p); err == nil {
				serr := f.Sync()
				f.Close()
				if serr != nil {
					return fmt.Errorf("sync side dir %s: %w", p, serr)
				}
			}
		}
	}
	return nil
}

// Close releases the compressor.
func (w *SideWriter) Close() error {
	if w.enc != nil {
		return w.enc.Close()
	}
	return nil
}

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// encode renders rec as one JSON line. The values, which hold nearly all
// the bytes, are written by hand so that their raw JSON goes out verbatim;
// encoding/json would scan and re-check every byte of them.
func (w *SideWriter) encode(rec *Record) ([]byte, error) {
	meta := *rec
	meta.Values = nil
	w.buf.Reset()
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&meta); err != nil {
		return nil, err
	}
	head := w.buf.Bytes()
	const marker = `"values":null`
	i := bytes.Index(head, []byte(marker))
	if i < 0 {
		return nil, fmt.Errorf("no values member in %q", head)
	}
	size := len(head)
	for _, v := range rec.Values {
		size += len(v.Raw) + len(v.RawBase64) + len(v.Placeholder) + len(v.Path) + 200
	}
	out := make([]byte, 0, size)
	out = append(out, head[:i]...)
	out = append(out, `"values":[`...)
	for k, v := range rec.Values {
		if k > 0 {
			out = append(out, ',')
		}
		out = appendValue(out, v)
	}
	out = append(out, ']')
	out = append(out, head[i+len(marker):]...)
	return out, nil
}

func appendString(b []byte, s string) []byte {
	out, err := jsontext.AppendQuote(b, s)
	if err != nil {
		out, _ = jsontext.AppendQuote(b, strings.ToValidUTF8(s, "\uFFFD"))
	}
	return out
}

func appendValue(b []byte, v StoredValue) []byte {
	b = append(b, `{"path":`...)
	b = appendString(b, v.Path)
	b = append(b, `,"trigger":`...)
	b = appendString(b, v.Trigger)
	if v.Block {
		b = append(b, `,"block":true`...)
	}
	if len(v.Raw) > 0 {
		b = append(b, `,"raw":`...)
		b = append(b, v.Raw...)
	}
	if v.RawBase64 != "" {
		b = append(b, `,"raw_base64":`...)
		b = appendString(b, v.RawBase64)
	}
	b = append(b, `,"sha256":`...)
	b = appendString(b, v.SHA256)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(v.Size), 10)
	b = append(b, `,"placeholder":`...)
	b = appendString(b, v.Placeholder)
	b = append(b, `,"extracted_at":`...)
	b = appendString(b, v.ExtractedAt.UTC().Format(time.RFC3339Nano))
	return append(b, '}')
}

// ListSideFiles lists the side files of dir by entry id (compressed or
// not, temp and other dot files excluded), with their sizes on disk. A
// missing dir has none.
func ListSideFiles(dir string) (map[string]int64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side dir %s: %w", dir, err)
	}
	out := make(map[string]int64, len(ents))
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !e.Type().IsRegular() {
			continue
		}
		id, ok := strings.CutSuffix(n, ".json.zst")
		if !ok {
			id, ok = strings.CutSuffix(n, ".json")
		}
		if !ok || ValidID(id) != nil {
			continue
		}
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		out[id] += size
	}
	return out, nil
}
