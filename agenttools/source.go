package agenttools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// MaxTextBytes bounds the free-text members of a plugin request
// (tool_name, run_id, session_key, a model's name), in bytes.
const MaxTextBytes = 512

// CheckText checks a free-text member of a request: at most MaxTextBytes
// bytes of valid UTF-8 without control characters. The error names the
// member and wraps brainsurgeon.ErrInvalid.
func CheckText(member, v string) error {
	switch {
	case len(v) > MaxTextBytes:
		return fmt.Errorf("%s: expected at most %d bytes, found %d: %w", member, MaxTextBytes, len(v), bs.ErrInvalid)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s: expected valid UTF-8, found %q: %w", member, v, bs.ErrInvalid)
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%s: expected no control characters, found %q in %q: %w", member, c, v, bs.ErrInvalid)
		}
	}
	return nil
}

// SourceRequest is a tool result to store at the source (the body of
// POST /api/plugin/v1/source without the session's identity): the
// plugin's middleware sends a large tool result before the host writes it,
// and the transcript gets the placeholder content instead. Content and
// Details are kept as the bytes of the request.
//
// A request without placeholder_content (the plugin's, now that the
// daemon owns the placeholder's wording) gets the placeholder that
// BuildPlaceholder builds; one that carries it (an older plugin) has it
// stored as it is.
type SourceRequest struct {
	RunID      string `json:"run_id"`
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	// ToolLabel is the tool the placeholder names: the tool a Tool Search
	// tool_call ran (which only the plugin can read from the host's
	// result), else "" for ToolName.
	ToolLabel          string          `json:"tool_label"`
	Key                string          `json:"key"`
	Content            json.RawMessage `json:"content"`
	Details            json.RawMessage `json:"details"`
	PlaceholderContent json.RawMessage `json:"placeholder_content"`
	PlaceholderDetails json.RawMessage `json:"placeholder_details"`
	// SessionKey is the host's key of the session, recorded with the
	// value; it is the session's identity, decoded with it, not here.
	SessionKey string `json:"-"`
	// Session names the session in the CLI hint of a placeholder built
	// here (SourceSession of the request's identity) and PreviewChars is
	// its preview (the configured source_preview_chars); the caller sets
	// both.
	Session      string `json:"-"`
	PreviewChars int    `json:"-"`
}

// SourceSettings are the daemon's settings of the store at the source,
// which the plugin learns from GET /api/plugin/v1/health and from each
// POST /api/plugin/v1/source answer: it offloads a result whose text
// blocks hold more than OffloadAboveChars characters (code points), and
// the placeholder shows PreviewChars of head and of tail
// (config.Config's source_offload_above_chars and source_preview_chars).
type SourceSettings struct {
	OffloadAboveChars int `json:"source_offload_above_chars"`
	PreviewChars      int `json:"source_preview_chars"`
}

// SourceResponse is what storing a tool result at the source answers.
type SourceResponse struct {
	// Key is the side key, "tc-<tool_call_id>".
	Key string `json:"key"`
	// Bytes and SHA256 are the length and hex sha256 of the content bytes
	// stored.
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Placeholder is "[[extracted-<key>]]".
	Placeholder string `json:"placeholder"`
	// PlaceholderContent and PlaceholderDetails are what the host writes
	// in the result's place, as stored (without insignificant white
	// space); PlaceholderDetails is absent when the request had no
	// details and sent no placeholder details.
	PlaceholderContent json.RawMessage `json:"placeholder_content"`
	PlaceholderDetails json.RawMessage `json:"placeholder_details,omitempty"`
	// SourceSettings are the settings in force (set by the REST API).
	SourceSettings
}

// sourceMeta is the record's "source" member.
type sourceMeta struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	RunID      string `json:"run_id"`
	SessionKey string `json:"session_key"`
	StoredAt   string `json:"stored_at"`
}

// Check checks the request before its session is looked up: the key is
// "tc-" and the tool call id (a valid side key), tool_name, tool_label
// and run_id are short text (CheckText), content is an array of content
// blocks and placeholder_content, when given, an array holding a text
// block with the key's placeholder (placeholder_details without it is
// refused). It returns the key; every error wraps
// brainsurgeon.ErrInvalid.
func (q *SourceRequest) Check() (string, error) {
	key, err := extract.SourceKey(q.ToolCallID)
	if err != nil {
		return "", fmt.Errorf("tool_call_id: %w", err)
	}
	if q.Key != key {
		return "", fmt.Errorf("key: expected %q (\"tc-\" and the tool_call_id), found %.80q: %w", key, q.Key, bs.ErrInvalid)
	}
	for _, m := range []struct{ name, v string }{{"tool_name", q.ToolName}, {"tool_label", q.ToolLabel}, {"run_id", q.RunID}} {
		if err := CheckText(m.name, m.v); err != nil {
			return "", err
		}
	}
	if c := bytes.TrimSpace(q.Content); len(c) == 0 || c[0] != '[' {
		return "", fmt.Errorf("content: expected the tool result's content blocks (a JSON array), found %.40q: %w", string(c), bs.ErrInvalid)
	}
	ph := extract.Placeholder(key)
	if isNull(q.PlaceholderContent) {
		if !isNull(q.PlaceholderDetails) {
			return "", fmt.Errorf("placeholder_details: expected none without placeholder_content (the daemon builds both), found %.40q: %w", string(q.PlaceholderDetails), bs.ErrInvalid)
		}
		return key, nil
	}
	var phBlocks []json.RawMessage
	if err := json.Unmarshal(q.PlaceholderContent, &phBlocks); err != nil {
		return "", fmt.Errorf("placeholder_content: expected a JSON array of content blocks: %v: %w", err, bs.ErrInvalid)
	}
	if texts, _, err := extract.SourceText(q.PlaceholderContent); err != nil || !strings.Contains(strings.Join(texts, ""), ph) {
		return "", fmt.Errorf("placeholder_content: expected a text block holding %s, found none: %w", ph, bs.ErrInvalid)
	}
	return key, nil
}

// ConflictError is the error of a tool result stored under a key the
// session already holds with other content: a tool call id the host
// repeats in a later turn must not replace a value a placeholder may
// still name. The REST API answers it 409.
type ConflictError struct {
	Key     string
	Session bs.SessionRef
	// Stored and New are the hex sha256 and length of the content stored
	// and of the content refused.
	StoredSHA256, NewSHA256 string
	StoredBytes, NewBytes   int
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("key %s: session %s already holds a tool result under this key with other content (sha256 %.16s…, %d bytes; this one %.16s…, %d bytes): the tool call id was used again; the result is not stored",
		e.Key, e.Session, e.StoredSHA256, e.StoredBytes, e.NewSHA256, e.NewBytes)
}

// Sources stores tool results at the source. Its lock makes the
// conflict check and the store of a record one step, so one side store
// should have one Sources. The zero value is ready; a Sources must not be
// copied after first use.
type Sources struct {
	mu sync.Mutex
}

// Store stores the tool result q (checked with Check, which returned
// key) in the side store of the session ref as the side record key, durably, before it
// returns: the content bytes as they are, the placeholder content that
// replaces them (without insignificant white space; built by
// BuildPlaceholder with q's Session and PreviewChars when q carries none),
// the details and their placeholder when there are details, and the
// source's metadata (tool call id, tool name, run id, session key, now).
// The answer holds the placeholder content and details as stored. A
// record of the same key with the same content (sha256 and length) is
// replaced (a retry); one with other content is left as it is and the error is a
// *ConflictError. The request's bytes are stored without a copy: the
// caller must not change them.
func (s *Sources) Store(ctx context.Context, side bs.SideStore, ref bs.SessionRef, q *SourceRequest, key string, now time.Time) (SourceResponse, error) {
	sum := sha256.Sum256(q.Content)
	sumHex := hex.EncodeToString(sum[:])
	if isNull(q.PlaceholderContent) {
		label := q.ToolLabel
		if label == "" {
			label = q.ToolName
		}
		c, d, err := BuildPlaceholder(PlaceholderInput{Key: key, Tool: label, Session: q.Session, Content: q.Content, Details: q.Details,
			PreviewChars: q.PreviewChars, Bytes: len(q.Content), SHA256: sumHex})
		if err != nil {
			return SourceResponse{}, err
		}
		q.PlaceholderContent, q.PlaceholderDetails = c, d
	}
	phc := compactJSON(q.PlaceholderContent)
	var phd []byte
	if !isNull(q.PlaceholderDetails) {
		phd = compactJSON(q.PlaceholderDetails)
	}
	rec := &extract.Record{Session: ref.String(), EntryID: key, TriggerType: string(bs.TriggerToolResult), ExtractedAt: now}
	rec.Put(extract.NewStoredValueShared(extract.SourceContentPath, bs.TriggerToolResult, false, q.Content, phc, now))
	if !isNull(q.Details) {
		stored := phd
		if stored == nil {
			stored = []byte("null")
		}
		rec.Put(extract.NewStoredValueShared(extract.SourceDetailsPath, bs.TriggerToolResult, false, q.Details, stored, now))
	}
	meta, err := json.Marshal(sourceMeta{ToolCallID: q.ToolCallID, ToolName: q.ToolName, RunID: q.RunID,
		SessionKey: q.SessionKey, StoredAt: now.Format(time.RFC3339Nano)})
	if err != nil {
		return SourceResponse{}, err
	}
	rec.Extra = map[string]json.RawMessage{"source": meta}
	if err := s.put(ctx, side, ref, rec, sumHex, len(q.Content)); err != nil {
		return SourceResponse{}, err
	}
	return SourceResponse{Key: key, Bytes: len(q.Content), SHA256: sumHex, Placeholder: extract.Placeholder(key),
		PlaceholderContent: phc, PlaceholderDetails: phd}, nil
}

// put stores the source record rec durably, unless the session already
// holds a record of its key whose content differs (the conflict rule of
// Store).
func (s *Sources) put(ctx context.Context, side bs.SideStore, ref bs.SessionRef, rec *extract.Record, sumHex string, size int) error {
	key := rec.EntryID
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := extract.LoadRecord(ctx, side, ref, key)
	switch {
	case err == nil:
		v, ok := old.Value(extract.SourceContentPath)
		if !ok || v.SHA256 != sumHex || v.Size != size {
			return &ConflictError{Key: key, Session: ref, StoredSHA256: v.SHA256, StoredBytes: v.Size, NewSHA256: sumHex, NewBytes: size}
		}
	case !errors.Is(err, bs.ErrNotFound):
		return fmt.Errorf("store %s in %s: read the record already stored under this key: %w", key, ref, err)
	}
	if _, err := extract.SaveRecord(ctx, side, ref, rec); err != nil {
		return fmt.Errorf("store %s in %s: %w", key, ref, err)
	}
	if err := side.Sync(ctx, ref); err != nil {
		return fmt.Errorf("store %s in %s: sync: %w", key, ref, err)
	}
	return nil
}

// compactJSON returns raw without insignificant white space (raw itself
// when it is not valid JSON, which the caller has ruled out).
func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}
