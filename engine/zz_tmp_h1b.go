package engine

// Temporary minimal versions of the functions the summary layers need from
// the rest of the package, until they exist on this branch. The lead
// deletes this file at merge.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
	"unicode/utf16"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

func (e *Engine) session(ref bs.SessionRef) *sessionState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sessions == nil {
		e.sessions = map[string]*sessionState{}
	}
	k := ref.Identity()
	s := e.sessions[k]
	if s == nil {
		s = &sessionState{}
		e.sessions[k] = s
	}
	return s
}

func (e *Engine) statePath(ref bs.SessionRef) string {
	return filepath.Join(e.StateDir, "engine", ref.Agent, ref.ID+".json")
}

func (e *Engine) loadState(ref bs.SessionRef) (*State, error) {
	b, err := os.ReadFile(e.statePath(ref))
	if errors.Is(err, fs.ErrNotExist) {
		return &State{Version: 1}, nil
	}
	if err != nil {
		return nil, err
	}
	st := &State{}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("engine state of %s: %w", ref, err)
	}
	return st, nil
}

func (e *Engine) saveState(ref bs.SessionRef, st *State) error {
	p := e.statePath(ref)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(p, b, 0o600)
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) log() bs.Logger { return bs.LoggerOrDiscard(e.Logger) }

func (e *Engine) messages(ctx context.Context, tr bs.Transcript, _ *Request, _ *State) ([]viewMsg, error) {
	nodes := tr.Nodes()
	c := tr.Context()
	lines := make([]int, 0, len(c.Messages))
	for _, i := range c.Messages {
		lines = append(lines, nodes[i].Line)
	}
	slices.Sort(lines)
	raws := map[int][]byte{}
	for en, err := range tr.Lines(ctx, lines) {
		if err != nil {
			return nil, err
		}
		raws[en.Line] = en.Raw
	}
	out := make([]viewMsg, 0, len(c.Messages))
	for k, i := range c.Messages {
		n := nodes[i]
		var j struct {
			Extractable *bool `json:"_extractable"`
			Message     struct {
				Role       string          `json:"role"`
				Timestamp  int64           `json:"timestamp"`
				ToolCallID string          `json:"toolCallId"`
				Content    json.RawMessage `json:"content"`
			} `json:"message"`
		}
		_ = json.Unmarshal(raws[n.Line], &j)
		var blocks []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		_ = json.Unmarshal(j.Message.Content, &blocks)
		var calls []string
		for _, b := range blocks {
			if b.Type == "toolCall" {
				calls = append(calls, b.ID)
			}
		}
		chars := len(utf16.Encode([]rune(string(j.Message.Content))))
		out = append(out, viewMsg{Index: k, Line: n.Line, ID: n.ID, Role: j.Message.Role, Timestamp: j.Message.Timestamp,
			CallID: j.Message.ToolCallID, Calls: calls, Tokens: (chars + 3) / 4, Pinned: j.Extractable != nil && !*j.Extractable})
	}
	return out, nil
}
