package extract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Format identifies BrainSurgeon's side files.
const Format = "brainsurgeon.extracted/1"

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
	// Extra holds the members of the record that other packages own
	// (package restore keeps its undo journal and the originals of the
	// values it redacted under "journal" and "redactions"), as raw JSON,
	// written and read back verbatim. Extraction never changes them.
	Extra map[string]json.RawMessage `json:"-"`
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

// NewStoredValue records raw (copied) as extracted at path.
func NewStoredValue(path string, trigger bs.TriggerType, block bool, raw, placeholder []byte, at time.Time) StoredValue {
	v := newStoredValue(path, trigger, block, raw, placeholder, at)
	if v.Raw != nil {
		v.Raw = bytes.Clone(raw)
	}
	return v
}

// NewStoredValueShared is NewStoredValue without the copy: the value's
// Raw refers to raw, which the caller must not change afterwards. It
// spares a copy of a large value the caller owns.
func NewStoredValueShared(path string, trigger bs.TriggerType, block bool, raw, placeholder []byte, at time.Time) StoredValue {
	return newStoredValue(path, trigger, block, raw, placeholder, at)
}

// newStoredValue is NewStoredValue without the copy: Raw refers to raw.
func newStoredValue(path string, trigger bs.TriggerType, block bool, raw, placeholder []byte, at time.Time) StoredValue {
	sum := sha256.Sum256(raw)
	v := StoredValue{Path: path, Trigger: string(trigger), Block: block, SHA256: hex.EncodeToString(sum[:]),
		Size: len(raw), Placeholder: string(placeholder), ExtractedAt: at.UTC()}
	if utf8.Valid(raw) && len(raw) > 0 {
		// The raw JSON value is stored as it is (not as a string holding
		// it): byte-exact, no escaping cost, and readable with jq.
		v.Raw = raw
	} else {
		v.RawBase64 = base64.StdEncoding.EncodeToString(raw)
	}
	return v
}

// Bytes returns the value's original bytes after checking their hash. A
// mismatch is an error wrapping brainsurgeon.ErrCorrupt.
func (v StoredValue) Bytes() ([]byte, error) {
	raw := []byte(v.Raw)
	if v.RawBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(v.RawBase64)
		if err != nil {
			return nil, fmt.Errorf("value %s: raw_base64: %v: %w", v.Path, err, bs.ErrCorrupt)
		}
		raw = b
	}
	if v.SHA256 == "" {
		return raw, nil // a legacy value: no hash to check
	}
	sum := sha256.Sum256(raw)
	if hex.EncodeToString(sum[:]) != v.SHA256 || (v.Size != 0 && len(raw) != v.Size) {
		return nil, fmt.Errorf("value %s: sha256 %s does not match the stored %s: %w", v.Path, hex.EncodeToString(sum[:8]), shortHash(v.SHA256), bs.ErrCorrupt)
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

// DecodeRecord parses a stored record: ours (with a "format" member) or
// one of the first BrainSurgeon ({"<key>": value, "__meta": {…}}, Legacy
// set). An unreadable record is an error wrapping brainsurgeon.ErrCorrupt.
func DecodeRecord(data []byte) (*Record, error) {
	rec, err := decodeRecord(data)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, bs.ErrCorrupt)
	}
	return rec, nil
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
		for k, v := range probe {
			if !recordMembers[k] {
				if r.Extra == nil {
					r.Extra = map[string]json.RawMessage{}
				}
				r.Extra[k] = v
			}
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

// recordMembers are the members Record decodes itself; the others go to
// Extra.
var recordMembers = map[string]bool{
	"format": true, "session": true, "entry_id": true, "trigger_type": true, "extracted_at": true, "values": true,
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// EncodeRecord renders rec as one JSON line (Format is set). The values,
// which hold nearly all the bytes, are written by hand so that their raw
// JSON goes out verbatim; encoding/json would scan and re-check every byte
// of them. Extra members follow the known ones, sorted by name.
func EncodeRecord(rec *Record) ([]byte, error) { return appendRecord(nil, rec) }

// appendRecord appends the encoding of rec to dst (see EncodeRecord).
func appendRecord(dst []byte, rec *Record) ([]byte, error) {
	// The key is an entry id or a source key ("tc-<toolCallId>"): any
	// valid side key.
	if err := bs.CheckSideKey(rec.EntryID); err != nil {
		return nil, err
	}
	rec.Format = Format
	var head []byte
	if plain(rec.Session) && plain(rec.EntryID) && plain(rec.TriggerType) {
		// The common case, written by hand: encoding/json's reflection was
		// a fifth of the side phase at 20,000 records a pass. The bytes are
		// the same as encoding/json's for these plain strings.
		head = make([]byte, 0, 160+len(rec.Session)+len(rec.EntryID))
		head = append(head, `{"format":"`+Format+`","session":"`...)
		head = append(head, rec.Session...)
		head = append(head, `","entry_id":"`...)
		head = append(head, rec.EntryID...)
		head = append(head, `","trigger_type":"`...)
		head = append(head, rec.TriggerType...)
		head = append(head, `","extracted_at":`...)
		var err error
		if head, err = rec.ExtractedAt.AppendText(append(head, '"')); err != nil {
			return nil, err
		}
		head = append(head, `","values":null}`...)
	} else {
		meta := *rec
		meta.Values = nil
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&meta); err != nil {
			return nil, err
		}
		head = bytes.TrimRight(buf.Bytes(), "\n")
	}
	if len(rec.Extra) > 0 {
		keys := make([]string, 0, len(rec.Extra))
		for k := range rec.Extra {
			if !recordMembers[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		head = head[:len(head)-1] // the closing brace
		for _, k := range keys {
			head = append(head, ',')
			head = appendString(head, k)
			head = append(head, ':')
			head = append(head, rec.Extra[k]...)
		}
		head = append(head, '}')
	}
	const marker = `"values":null`
	i := bytes.Index(head, []byte(marker))
	if i < 0 {
		return nil, fmt.Errorf("no values member in %q", head)
	}
	size := len(head)
	for _, v := range rec.Values {
		size += len(v.Raw) + len(v.RawBase64) + len(v.Placeholder) + len(v.Path) + 200
	}
	out := slices.Grow(dst[:0], size)
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
	return append(out, '\n'), nil
}

// plain reports whether s is printable ASCII without a quote or a
// backslash: JSON writes it as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
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

// LoadRecord reads and decodes the record of one entry from a side store.
// A missing record wraps brainsurgeon.ErrNotFound, an undecodable one
// brainsurgeon.ErrCorrupt.
func LoadRecord(ctx context.Context, side bs.SideStore, ref bs.SessionRef, entryID string) (*Record, error) {
	sr, err := side.Get(ctx, ref, entryID)
	if err != nil {
		return nil, err
	}
	rec, err := DecodeRecord(sr.Data)
	if err != nil {
		return nil, fmt.Errorf("side record of entry %s: %w", entryID, err)
	}
	if rec.EntryID == "" {
		rec.EntryID = entryID
	}
	return rec, nil
}

// SaveRecord encodes rec and puts it into a side store (not yet durable:
// call Sync).
func SaveRecord(ctx context.Context, side bs.SideStore, ref bs.SessionRef, rec *Record) (int, error) {
	_, n, err := saveRecord(ctx, side, ref, rec, nil)
	return n, err
}

// saveRecord is SaveRecord encoding into buf, which it returns for reuse
// (a SideStore keeps no Data once Put returns).
func saveRecord(ctx context.Context, side bs.SideStore, ref bs.SessionRef, rec *Record, buf []byte) ([]byte, int, error) {
	data, err := appendRecord(buf, rec)
	if err != nil {
		return buf, 0, fmt.Errorf("encode side record of entry %s: %w", rec.EntryID, err)
	}
	return data, len(data), side.Put(ctx, ref, []bs.SideRecord{{EntryID: rec.EntryID, Data: data}})
}
