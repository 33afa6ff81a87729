package restore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// heldSourceKey returns the source key ("tc-<toolCallId>", see
// extract.SourceKeyPrefix) whose placeholder toolResult entry e holds, or
// "" when it holds none. A tool result stored at the source is an
// extracted value of that entry: its record is keyed by the tool call,
// not by the entry id.
func heldSourceKey(e *bs.Entry) string {
	k := extract.SourceKeyOf(e)
	if k == "" || !extract.IsPlaceholderValue(e.Raw, k) {
		return ""
	}
	return k
}

// checkSource is checkPlaceholders for the source placeholder of e (key
// from heldSourceKey), against the key's side record: the record must
// hold the result's content, intact.
func checkSource(session string, e *bs.Entry, key string, sr sideRecord) placeholderCheck {
	c := placeholderCheck{ptr: extract.SourceContentPath}
	problem := func(kind, format string, args ...any) {
		c.problem = &Problem{Session: session, EntryID: e.ID, Line: e.Line, Path: c.ptr, Kind: kind,
			Detail: fmt.Sprintf(format, args...), File: sr.file}
	}
	switch {
	case sr.err != nil && errors.Is(sr.err, bs.ErrNotFound):
		problem(ProblemMissingFile, "no side record %s for the result of this tool call", key)
		c.problem.File = ""
	case sr.err != nil:
		problem(ProblemCorruptFile, "%v", sr.err)
	default:
		v, ok := sr.rec.Value(extract.SourceContentPath)
		if !ok {
			problem(ProblemMissingValue, "side record %s holds no value at %s (it has %s)", key, extract.SourceContentPath, valuePaths(sr.rec))
			break
		}
		if _, err := v.Bytes(); err != nil {
			problem(ProblemHashMismatch, "%v", err)
			break
		}
		c.value = v
	}
	return c
}

// SourceValue is a tool result stored at the source (a side record keyed
// "tc-<toolCallId>"), as Restorer.Source returns it.
type SourceValue struct {
	// Key is the side key.
	Key string `json:"key"`
	// Content is the result's content blocks and Details its details
	// (nil when none were stored), exactly as they were stored.
	Content json.RawMessage `json:"content"`
	Details json.RawMessage `json:"details,omitempty"`
	// Bytes and SHA256 are the length and hex sha256 of Content.
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Texts are the texts of Content's text blocks; OtherBlocks counts
	// its other blocks (images).
	Texts       []string `json:"-"`
	OtherBlocks int      `json:"other_blocks"`
	// TextLiterals are the "text" members of Content's text blocks as
	// the JSON string literals stored (quotes included): Texts exactly,
	// lone surrogate escapes included, which Texts turns into U+FFFD.
	TextLiterals []json.RawMessage `json:"-"`
}

// Source returns the tool result stored at the source under key in the
// session ref (ReadSource), and records the restore in the Restorer's log
// (Restores, see NoteSourceRestore), so that the context engine's view
// shows the result in full for the protection window.
func (r *Restorer) Source(ctx context.Context, ref bs.SessionRef, key string) (*SourceValue, error) {
	sv, err := r.ReadSource(ctx, ref, key)
	if err != nil {
		return nil, err
	}
	r.record(ctx, ref, key)
	return sv, nil
}

// NoteSourceRestore records in the Restorer's log (Restores) that the
// agent was given the whole tool result stored under key, so that the
// context engine's view shows it in full for the protection window. A
// failure is only logged.
func (r *Restorer) NoteSourceRestore(ctx context.Context, ref bs.SessionRef, key string) {
	r.record(ctx, ref, key)
}

// ReadSource returns the tool result stored at the source under key in the
// session ref; it reads only (the transcript keeps its placeholder, and no
// restore is recorded). A key that is not a source key wraps ErrInvalid; a
// key the session does not hold wraps ErrNotFound ("not found in this
// session": a value of another session is never looked up); a damaged
// record wraps ErrCorrupt.
func (r *Restorer) ReadSource(ctx context.Context, ref bs.SessionRef, key string) (*SourceValue, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	if !extract.IsSourceKey(key) {
		return nil, fmt.Errorf("key %.60q: expected a source key %s<toolCallId>: %w", key, extract.SourceKeyPrefix, bs.ErrInvalid)
	}
	if err := bs.CheckSideKey(key); err != nil {
		return nil, err
	}
	rec, err := extract.LoadRecord(ctx, r.Side, ref, key)
	if errors.Is(err, bs.ErrNotFound) {
		return nil, fmt.Errorf("value %s not found in this session (%s): expected the id of a [[extracted-<id>]] placeholder of this session: %w", key, ref, bs.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	content, err := extract.SourceContent(rec)
	if err != nil {
		return nil, err
	}
	details, err := extract.SourceDetails(rec)
	if err != nil {
		return nil, err
	}
	texts, others, err := extract.SourceText(content)
	if err != nil {
		return nil, err
	}
	lits, _, err := extract.SourceTextLiterals(content)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(content)
	return &SourceValue{Key: key, Content: content, Details: details, Bytes: len(content), SHA256: hex.EncodeToString(sum[:]),
		Texts: texts, OtherBlocks: others, TextLiterals: lits}, nil
}
