package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// Paging of the session detail.
const (
	DefaultPageSize = 200
	MaxPageSize     = 2000
)

// EntryView is one line of a session in the session detail.
type EntryView struct {
	Line       int       `json:"line"`
	Kind       string    `json:"kind"`
	ID         string    `json:"id,omitempty"`
	ParentID   string    `json:"parent_id,omitempty"`
	Type       string    `json:"type,omitempty"`
	Role       string    `json:"role,omitempty"`
	CustomType string    `json:"custom_type,omitempty"`
	Timestamp  time.Time `json:"timestamp,omitzero"`
	BlockTypes []string  `json:"block_types,omitempty"`
	// Size is the line's size in bytes.
	Size int `json:"size"`
	// Extracted is true when the entry holds at least one placeholder of
	// its own id; ExtractedPaths are the JSON Pointers of those values.
	Extracted      bool     `json:"extracted"`
	ExtractedPaths []string `json:"extracted_paths,omitempty"`
	// Entry is the line's JSON as stored; a malformed line is in RawText
	// instead.
	Entry   json.RawMessage `json:"entry,omitempty"`
	RawText string          `json:"raw_text,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// detail answers GET /api/sessions/{agent}/{id}?offset=&limit=: the
// session's counts and one page of its lines (blank lines left out),
// each entry with its extracted marker. Only the page's lines are read in
// full. "doctor" is the session's diagnosis (a doctor.Report: health,
// every problem with its line, entry and tool call, and whether Fix would
// repair it); when the diagnosis failed it is null and "doctor_error"
// says why.
func (s *server) detail(r *http.Request) (any, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	offset, err := queryInt(r, "offset", 0, 0)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(r, "limit", DefaultPageSize, MaxPageSize)
	if err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = DefaultPageSize
	}
	info := s.cache.list(r.Context(), s, []bs.SessionRef{ref}, false)[0]
	if info.Error != "" {
		return nil, errors.New(info.Error)
	}
	tr, err := s.set.Store.Open(r.Context(), ref, nil) // the index only
	if err != nil {
		return nil, err
	}
	nodes := tr.Nodes()
	var shown []int // indexes of non-blank nodes
	for i := range nodes {
		if nodes[i].Kind != bs.KindBlank {
			shown = append(shown, i)
		}
	}
	total := len(shown)
	page := shown[min(offset, total):]
	if len(page) > limit {
		page = page[:limit]
	}
	lines := make([]int, len(page))
	for i, ni := range page {
		lines[i] = nodes[ni].Line
	}
	views := make([]EntryView, 0, len(page))
	for e, err := range tr.Lines(r.Context(), lines) {
		if err != nil {
			return nil, err
		}
		// Lines gives the raw bytes only: parse them (a copy, so that the
		// views do not hold on to the buffer the lines were read into).
		views = append(views, viewOf(entry.Parse(bytes.Clone(e.Raw), e.Line, e.Offset)))
	}
	out := map[string]any{"session": info, "total": total, "offset": offset,
		"limit": limit, "entries": views}
	// The diagnosis is made again here: it is one session, and a
	// write-back queued since the list's diagnosis shows at once.
	if rep, err := s.doctor().Diagnose(r.Context(), ref); err == nil {
		info.setHealth(rep)
		out["session"], out["doctor"] = info, rep
	} else {
		out["doctor"], out["doctor_error"] = nil, err.Error()
	}
	if st := s.engineStatus(r.Context(), ref); st != nil {
		out["engine"] = st
		if st.View != nil {
			out["engine_view"] = st.View
		}
	}
	return out, nil
}

func viewOf(e *bs.Entry) EntryView {
	v := EntryView{Line: e.Line, Kind: e.Kind.String(), ID: e.ID, ParentID: e.ParentID, Type: e.Type,
		Role: e.Role, CustomType: e.CustomType, Timestamp: e.Timestamp, Size: len(e.Raw)}
	for _, b := range e.Blocks {
		v.BlockTypes = append(v.BlockTypes, b.Type)
	}
	if e.Kind == bs.KindMalformed || !json.Valid(e.Raw) {
		v.RawText = string(e.Raw)
		if e.Err != nil {
			v.Error = e.Err.Error()
		}
		return v
	}
	v.Entry = json.RawMessage(e.Raw)
	if extract.HoldsOwnPlaceholder(e.Raw, e) {
		v.Extracted = true
		for _, sv := range e.Strings {
			if sv.Start >= 0 && sv.End <= len(e.Raw) && extract.HoldsOwnPlaceholder(e.Raw[sv.Start:sv.End], e) {
				v.ExtractedPaths = append(v.ExtractedPaths, sv.Pointer)
			}
		}
	}
	return v
}

// ExtractedValue is one value of an entry's extracted content.
type ExtractedValue struct {
	Path    string `json:"path"`
	Trigger string `json:"trigger"`
	Block   bool   `json:"block,omitempty"`
	// Size is the value's size in bytes (its original JSON); Chars the
	// length of Content in characters when complete.
	Size   int    `json:"size"`
	Chars  int    `json:"chars"`
	SHA256 string `json:"sha256,omitempty"`
	// Content is the text of a string value, the JSON of a block; with
	// ?preview=N only its first N characters, Truncated then true.
	Content   string    `json:"content"`
	Truncated bool      `json:"truncated"`
	Extracted time.Time `json:"extracted_at,omitzero"`
	// Error says why the value cannot be trusted (hash mismatch); Content
	// is then restore.CorruptText.
	Error string `json:"error,omitempty"`
}

// extracted answers GET
// /api/sessions/{agent}/{id}/entries/{entryId}/extracted: the entry's
// extracted values from the side store (one record is read, never the
// whole side store), written out value by value.
//
// ?preview=N sends only the first N characters of each value (whole code
// points), with "truncated" and the full "chars" and "size", so that a UI
// can show a preview and fetch the rest on demand. ?key=K selects values
// (as restore's keys: a JSON Pointer, a suffix of one, or a content block
// index). ?raw=true with a key that selects one value sends that value's
// original JSON bytes exactly as they were in the transcript.
func (s *server) extracted(w http.ResponseWriter, r *http.Request) {
	ref, err := s.findSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entryID, err := param(r, "entryId")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	preview, err := queryInt(r, "preview", 0, 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	raw := false
	if v := q.Get("raw"); v != "" {
		if raw, err = strconv.ParseBool(v); err != nil {
			s.fail(w, r, fmt.Errorf("query parameter raw: expected true or false, got %q: %w", v, bs.ErrInvalid))
			return
		}
	}
	key := q.Get("key")
	if len(key) > 1024 || bytes.IndexByte([]byte(key), 0) >= 0 {
		s.fail(w, r, fmt.Errorf("query parameter key: expected a JSON Pointer of at most 1024 bytes without NUL: %w", bs.ErrInvalid))
		return
	}
	rec, err := extract.LoadRecord(r.Context(), s.set.Side, ref, entryID)
	if errors.Is(err, bs.ErrNotFound) {
		// A tool result stored at the source is keyed by its tool call.
		if k := s.sourceKeyOf(r.Context(), ref, entryID); k != "" {
			rec, err = extract.LoadRecord(r.Context(), s.set.Side, ref, k)
			if err == nil && key != "" && !slices.ContainsFunc(rec.Values, func(v extract.StoredValue) bool { return restore.MatchKey(key, v.Path) }) {
				key = extract.SourceContentPath // the placeholder's own pointer (…/content/0/text) stands for the whole content
			}
		}
	}
	if err != nil {
		if errors.Is(err, bs.ErrNotFound) {
			err = fmt.Errorf("entry %s of session %s has no extracted content (never extracted, or retention removed it): %w", entryID, ref, bs.ErrNotFound)
		}
		s.fail(w, r, err)
		return
	}
	vals := rec.Values
	if key != "" {
		vals = nil
		for _, v := range rec.Values {
			if restore.MatchKey(key, v.Path) {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			paths := make([]string, len(rec.Values))
			for i, v := range rec.Values {
				paths[i] = v.Path
			}
			s.fail(w, r, fmt.Errorf("key %q matches no extracted value of entry %s (it has %v): %w", key, entryID, paths, bs.ErrNotFound))
			return
		}
	}
	if raw {
		if len(vals) != 1 {
			s.fail(w, r, fmt.Errorf("raw=true needs a key that selects one value, %d selected: %w", len(vals), bs.ErrInvalid))
			return
		}
		b, err := vals[0].Bytes()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
		return
	}
	// Stream: the head, then one value at a time.
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	head := map[string]any{"entry_id": entryID, "agent": agentName(ref), "session_id": ref.ID,
		"backend": backendOf(ref), "trigger_type": rec.TriggerType, "extracted_at": rec.ExtractedAt,
		"size": rec.RawBytes(), "preview": preview}
	hb, _ := json.Marshal(head)
	_, _ = w.Write(hb[:len(hb)-1])
	_, _ = w.Write([]byte(`,"values":[`))
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i, v := range vals {
		if i > 0 {
			_, _ = w.Write([]byte(","))
		}
		if err := enc.Encode(valueView(v, preview)); err != nil {
			return // the client is gone
		}
	}
	_, _ = w.Write([]byte("]}\n"))
}

func valueView(v extract.StoredValue, preview int) ExtractedValue {
	out := ExtractedValue{Path: v.Path, Trigger: v.Trigger, Block: v.Block, Size: v.Size, SHA256: v.SHA256, Extracted: v.ExtractedAt}
	b, err := v.Bytes()
	if err != nil {
		out.Content, out.Error = restore.CorruptText(err.Error()), err.Error()
		return out
	}
	text := string(b)
	if !v.Block && len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) == nil {
			text = s
		}
	}
	out.Chars = utf8.RuneCountInString(text)
	if preview > 0 && out.Chars > preview {
		n, cut := 0, len(text)
		for i := range text {
			if n == preview {
				cut = i
				break
			}
			n++
		}
		text, out.Truncated = text[:cut], true
	}
	out.Content = text
	return out
}

// sourceKeyOf returns the source key ("tc-<toolCallId>") whose placeholder
// entry entryID of ref holds, or "" when it holds none.
func (s *server) sourceKeyOf(ctx context.Context, ref bs.SessionRef, entryID string) string {
	tr, err := s.set.Store.Open(ctx, ref, nil)
	if err != nil {
		return ""
	}
	n, ok := tr.Node(entryID)
	if !ok {
		return ""
	}
	e, err := tr.Entry(ctx, n.Line)
	if err != nil {
		return ""
	}
	c := *e
	if c.Role == "" {
		c.Role = n.Role
	}
	if k := extract.SourceKeyOf(&c); k != "" && extract.IsPlaceholderValue(c.Raw, k) {
		return k
	}
	return ""
}
