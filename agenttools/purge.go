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

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// purgeParams are purge_control's arguments.
type purgeParams struct {
	Action string `json:"action"`
	// ValueID names the value (restore) or the entry (set_extractable);
	// OldKey is its old name, accepted for a while (see valueID).
	ValueID string          `json:"value_id"`
	OldKey  string          `json:"key"`
	Keys    json.RawMessage `json:"keys"`
	Value   json.RawMessage `json:"value"`
	// Offset and MaxChars page a restore (PageOf).
	Offset   json.RawMessage `json:"offset"`
	MaxChars json.RawMessage `json:"max_chars"`
}

// purgeControl runs purge_control's actions.
func (t *Tools) purgeControl(ctx context.Context, ref bs.SessionRef, c call) (Result, error) {
	var p purgeParams
	if err := c.decode(&p); err != nil {
		return Result{}, err
	}
	key, err := valueID(p.ValueID, p.OldKey)
	if err != nil {
		return Result{}, fmt.Errorf("purge_control %s: %w", p.Action, err)
	}
	switch p.Action {
	case ActionGetContext:
		cx, err := t.GetContext(ctx, ref)
		if errors.Is(err, bs.ErrUnavailable) {
			return unavailable(UnavailableError(err, ""), map[string]any{"unavailable": true}), nil
		}
		if err != nil {
			return Result{}, err
		}
		var b strings.Builder
		agenttext.Context(&b, ContextName(ref, cx), cx)
		return textResult(b.String(), map[string]any{"session": cx.Session, "entries": cx.Entries,
			"context_messages": cx.ContextMessages, "bytes": cx.Bytes, "extracted_entries": len(cx.Extracted),
			"entries_with_placeholders": cx.EntriesWithPlaceholders, "extractable_now": cx.ExtractableNow,
			"extracted_bytes": cx.ExtractedBytes, "lost_values": cx.LostValues, "pending": cx.Pending}), nil
	case ActionRestore:
		if key == "" {
			return Result{}, errors.New(`purge_control restore: expected "value_id", the id of a [[extracted-<id>]] placeholder, found none`)
		}
		offset, err := intParam("purge_control restore: offset", p.Offset, 0)
		if err != nil {
			return Result{}, err
		}
		maxChars, err := intParam("purge_control restore: max_chars", p.MaxChars, agenttext.DefaultPageChars)
		if err != nil {
			return Result{}, err
		}
		if err := agenttext.CheckPage(offset, maxChars); err != nil {
			return Result{}, fmt.Errorf("purge_control restore: %w", err)
		}
		res, err := t.restore(ctx, ref, key, p.Keys, c.toolCallID, offset, maxChars)
		if errors.Is(err, bs.ErrUnavailable) {
			return unavailable(UnavailableError(err, key), map[string]any{"value_id": key, "unavailable": true}), nil
		}
		return res, err
	case ActionSetExtractable:
		if key == "" {
			return Result{}, errors.New(`purge_control set_extractable: expected "value_id", an entry id, found none`)
		}
		v := strings.TrimSpace(string(p.Value))
		var str string
		if json.Unmarshal(p.Value, &str) == nil {
			v = str // "true", "5" as strings, as the CLI takes them
		}
		res, err := t.SetExtractable(ctx, ref, key, v)
		if err != nil {
			return Result{}, err
		}
		var b strings.Builder
		agenttext.Set(&b, res)
		return textResult(b.String(), res), nil
	}
	return Result{}, fmt.Errorf("purge_control: action: expected %s, %s or %s, found %.40q", ActionGetContext, ActionRestore, ActionSetExtractable, p.Action)
}

// restore answers purge_control restore of key: a tool result stored at
// the source, else the entry's content from the engine's view when the
// side store holds no record of it, else the entry's values from the side
// store.
func (t *Tools) restore(ctx context.Context, ref bs.SessionRef, key string, rawKeys json.RawMessage, toolCallID string, offset, maxChars int) (Result, error) {
	if extract.IsSourceKey(key) {
		return t.restoreSource(ctx, ref, key, offset, maxChars)
	}
	if res, ok, err := t.restoreView(ctx, ref, key, rawKeys, offset, maxChars); ok {
		return res, err
	}
	keys, err := stringList(rawKeys)
	if err != nil {
		return Result{}, fmt.Errorf("purge_control restore: keys: %w", err)
	}
	res, err := t.RestoreEntry(ctx, ref, key, keys, toolCallID, offset)
	if res == nil {
		return Result{}, err
	}
	return t.restoreAnswer(key, res, err, offset, maxChars)
}

// unavailable is the answer of a call that could not reach the side store
// (err, from UnavailableError): ok false, and err's text as the one text
// block the model reads.
func unavailable(err error, details map[string]any) Result {
	text := err.Error()
	return Result{OK: false, Error: text, Content: []json.RawMessage{textBlock(text)}, Details: details}
}

// UnavailableError returns err as the agent reads it when err wraps
// brainsurgeon.ErrUnavailable (the side store cannot be reached now): an
// error that wraps err and whose text says that the value key (the
// session's extracted values when key is "", for get_context) cannot be
// read now, why, that it is kept in the side store, and to try again later
// (agenttext.UnavailableRestore, agenttext.UnavailableContext). Any other
// err, nil included, is returned as it is. The purge_control command
// prints the same text.
func UnavailableError(err error, key string) error {
	if !errors.Is(err, bs.ErrUnavailable) {
		return err
	}
	cause := bs.ErrorMessage(err)
	if key == "" {
		return &unavailableError{text: agenttext.UnavailableContext(cause), err: err}
	}
	return &unavailableError{text: agenttext.UnavailableRestore(key, cause), err: err}
}

// unavailableError is an error wrapping brainsurgeon.ErrUnavailable worded
// for the agent.
type unavailableError struct {
	text string
	err  error
}

func (e *unavailableError) Error() string { return e.text }
func (e *unavailableError) Unwrap() error { return e.err }

// GetContext returns purge_control get_context's report of the session
// ref: its size and what was extracted from it.
func (t *Tools) GetContext(ctx context.Context, ref bs.SessionRef) (*restore.Context, error) {
	return t.Restorer.GetContext(ctx, ref)
}

// ContextName is the name get_context's text gives the session: its
// agent/session id, and its key in parentheses when it has one.
func ContextName(ref bs.SessionRef, cx *restore.Context) string {
	name := cx.Session
	if ref.Key != "" {
		name += " (" + ref.Key + ")"
	}
	return name
}

// SetExtractable sets the "_extractable" member of the entry id to value
// ("true", "false" or a whole number), written now if the session is idle,
// else queued. A value of another form is an error naming the forms; in
// read-only mode nothing is written and the call is an error.
func (t *Tools) SetExtractable(ctx context.Context, ref bs.SessionRef, id, value string) (*restore.SetResult, error) {
	if _, err := restore.ParseExtractableValue(value); err != nil {
		return nil, fmt.Errorf("purge_control set_extractable: value: %w", err)
	}
	if t.ReadOnly {
		return nil, fmt.Errorf("purge_control set_extractable: the server is in read-only mode: setting _extractable of %s would write", id)
	}
	return t.Restorer.SetExtractable(ctx, ref, id, value)
}

// RestoreEntry restores the values of the entry id from the side store
// (keys selects some; none is all) and writes them back now if the
// session is idle, else queues the write-back. The restore of a later
// page (offset > 0) reads what the first page restored and writes
// nothing, nor does a read-only Tools. toolCallID names the call to redact.
// The result is nil only when nothing could be read; a write-back error
// comes with the result.
func (t *Tools) RestoreEntry(ctx context.Context, ref bs.SessionRef, id string, keys []string, toolCallID string, offset int) (*restore.Result, error) {
	return t.Restorer.Restore(ctx, ref, id, keys, restore.RestoreOptions{ToolCallID: toolCallID, NoWriteBack: t.ReadOnly || offset != 0})
}

// Source returns the tool result stored at the source under key (a
// "tc-" key) in the session ref; nothing is written.
func (t *Tools) Source(ctx context.Context, ref bs.SessionRef, key string) (*restore.SourceValue, error) {
	return t.Restorer.Source(ctx, ref, key)
}

// restoreSource answers purge_control restore of a "tc-" key. When the
// text of its content (the text blocks concatenated) fits in one page
// (PageOf) and offset is 0, the answer is the stored content blocks
// exactly (SplitTextBlocks, which a text that fits a page never needs).
// Otherwise it is that page: a header block saying which characters
// follow and how to get the next page, on the first page the content's
// other blocks (images) as stored, and last one text block holding exactly
// those characters. The text is paged on its stored JSON literals, so that
// every UTF-16 code unit the host wrote comes back, lone surrogates
// included. The key must be a record of this session; nothing is written.
//
// Only a restore that gives the whole result at once is recorded in the
// restore log (the engine's view then shows the result in full for the
// protection window): an agent that pages through a result larger than a
// page reads it from the pages, and the view keeps its placeholder, so that
// asking for one page never brings the whole value into the context.
func (t *Tools) restoreSource(ctx context.Context, ref bs.SessionRef, key string, offset, maxChars int) (Result, error) {
	sv, err := t.Restorer.ReadSource(ctx, ref, key)
	if err != nil {
		return Result{}, err
	}
	res, whole, err := pageOrWhole(sv, offset, maxChars, nil)
	if err == nil && whole {
		t.Restorer.NoteSourceRestore(ctx, ref, key)
	}
	return res, err
}

// restoreAnswer answers purge_control restore of the entry key from the
// side store (res, and werr, the write-back's error). The content is the
// value, exactly: when the values restored are the entry's content (every
// key under message.content, Result.EntryContent), the entry's content
// blocks as they were before extraction, paged like a restore from the
// engine's view (pageValue), so that a restore from either path answers
// the same blocks; otherwise one text block per value, holding exactly
// its text (a value longer than MaxTextBlock in consecutive blocks).
// What the restore did (written back, queued, already restored, read-only,
// restored before) goes to the details' "note"; a warning (values missing
// or corrupt, keys ignored, not written back) also to a last text block of
// its own, after the values, since the model must know that not
// everything came back.
func (t *Tools) restoreAnswer(key string, res *restore.Result, werr error, offset, maxChars int) (Result, error) {
	var nb strings.Builder
	switch {
	case offset != 0:
		nb.WriteString(agenttext.LaterPageNote(res.EntryID))
	default:
		agenttext.RestoreNotes(&nb, res)
		if t.ReadOnly && res.Restored {
			nb.WriteString(agenttext.ReadOnlyRestoreNote)
		}
	}
	// Details are small metadata: the host keeps them in the transcript,
	// so they never repeat the values.
	d := map[string]any{"value_id": key, "entry_id": res.EntryID, "restored": res.Restored, "applied": res.Applied,
		"queued": res.Queued, "keys_restored": res.KeysRestored, "from": "side_store", "written_back": res.Applied,
		"note": strings.TrimSpace(nb.String())}
	if res.Warning != "" {
		d["warning"] = res.Warning
	}
	if res.AlreadyRestored {
		d["already_restored"] = true
	}
	if res.Suggestion != "" {
		d["suggestion"] = res.Suggestion
	}
	if werr != nil {
		d["write_back_error"] = werr.Error()
	}
	var out Result
	if res.EntryContent != nil {
		sv, err := viewSourceValue(key, res.EntryContent)
		if err != nil {
			return Result{}, fmt.Errorf("purge_control restore %s: %w", key, err)
		}
		if out, err = pageValue(sv, offset, maxChars, d); err != nil {
			return Result{}, err
		}
	} else {
		if offset != 0 {
			return Result{}, fmt.Errorf("purge_control restore: offset pages the content of a tool result, found it with the entry key %.60q, whose restored values (%s) are not its whole content and come whole", key, strings.Join(res.Keys(), ", "))
		}
		d["bytes"], d["sha256"] = restoredSum(res)
		var blocks []json.RawMessage
		for _, k := range res.Keys() {
			for _, part := range splitUTF16(res.Content[k], MaxTextBlock) {
				blocks = append(blocks, textBlock(part))
			}
		}
		d["blocks"] = len(blocks)
		out = Result{OK: true, Content: blocks, Details: d}
	}
	if res.Warning != "" {
		out.Content = append(out.Content, textBlock(agenttext.RestoreWarning(res)))
	}
	return out, nil
}

// restoredSum returns the size of the values an entry restore returned
// and the hex sha256 of their text (of the one value, or of the values
// concatenated in the order of Result.Keys).
func restoredSum(res *restore.Result) (int, string) {
	n := 0
	h := sha256.New()
	for _, k := range res.Keys() {
		n += res.SizesBytes[k]
		h.Write([]byte(res.Content[k]))
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// restoreView answers purge_control restore of key from the engine when
// the side store holds no record of it: the entry's content as the host's
// row stores it (Engine.Value), which the view shows in full from the
// next turn (in read-only mode the restore is not recorded and the note
// says so); nothing is written to the host. ok is false when the engine
// cannot answer (no engine, a record exists, or the engine does not know
// the entry, or the row holds the entry's own placeholder): the ordinary
// restore then runs and gives its own answer.
func (t *Tools) restoreView(ctx context.Context, ref bs.SessionRef, key string, keys json.RawMessage, offset, maxChars int) (Result, bool, error) {
	if t.Engine == nil || bs.CheckSideKey(key) != nil {
		return Result{}, false, nil
	}
	if _, err := extract.LoadRecord(ctx, t.Side, ref, key); !errors.Is(err, bs.ErrNotFound) {
		return Result{}, false, nil
	}
	v, err := t.Engine.Value(ctx, ref, key)
	if errors.Is(err, bs.ErrNotFound) || errors.Is(err, bs.ErrUnsupported) {
		t.log().Debug("context engine: no value for a restore", "session", ref.String(), "key", key, "error", err)
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, true, fmt.Errorf("purge_control restore %s: %w", key, err)
	}
	if bytes.Contains(v.Content, []byte(extract.Placeholder(key))) {
		// The row holds the entry's own placeholder and the side store
		// no record: the value is lost, which the ordinary restore says.
		return Result{}, false, nil
	}
	sv, err := viewSourceValue(key, v.Content)
	if err != nil {
		return Result{}, true, fmt.Errorf("purge_control restore %s: %w", key, err)
	}
	more := map[string]any{"entry_id": v.EntryID, "restored": true, "collapsed": v.Collapsed, "from": "transcript",
		"written_back": false, "note": agenttext.ViewRestoreNote(key, v.Collapsed, t.ReadOnly)}
	if !isNull(keys) {
		more["keys_ignored"] = true
	}
	res, err := pageValue(sv, offset, maxChars, more)
	if err != nil {
		return Result{}, true, fmt.Errorf("purge_control restore %s: %w", key, err)
	}
	t.log().Info("context engine: value restored from the transcript", "session", ref.String(), "entry_id", key,
		"bytes", sv.Bytes, "collapsed", v.Collapsed)
	return res, true, nil
}
