package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// Create writes lines as a new transcript
// <agentsDir>/<agent>/sessions/<id>.jsonl, where id is the "id" of the
// session header lines[0]. The agent's directory must exist (its sessions
// directory is made when missing). The file is written to a temp file in
// the sessions directory, fsynced, linked to its name (which fails when the
// name exists: an existing transcript is never replaced) and the directory
// is fsynced; on any error nothing is left behind. Nothing is registered in
// sessions.json: the host lists the session as an orphan transcript until
// it adopts it.
//
// It returns an error wrapping ErrInvalid for a bad agent name, a first
// line that is not a header with a usable id, a line that is not one JSON
// object on one line, or an id already in use; and one wrapping
// ErrUnsupported for a pi sessions dir (pi files sessions by working
// directory, not by agent).
func (s *Store) Create(ctx context.Context, agent string, lines [][]byte) (bs.SessionRef, error) {
	if s == nil {
		return bs.SessionRef{}, errNoStore
	}
	if err := ctx.Err(); err != nil {
		return bs.SessionRef{}, err
	}
	id, err := checkNewSession(agent, lines)
	if err != nil {
		return bs.SessionRef{}, fmt.Errorf("create session: %w", err)
	}
	d, err := s.discover(ctx)
	if err != nil {
		return bs.SessionRef{}, fmt.Errorf("create session %s/%s: %w", agent, id, err)
	}
	if d.Layout != LayoutOpenClaw {
		return bs.SessionRef{}, fmt.Errorf("create session %s/%s: %s is a %s sessions dir, expected an OpenClaw agents dir (<agent>/sessions/<id>.jsonl): %w",
			agent, id, d.Root, d.Layout, bs.ErrUnsupported)
	}
	agentDir := filepath.Join(d.Root, agent)
	if fi, err := os.Stat(agentDir); err != nil || !fi.IsDir() {
		return bs.SessionRef{}, fmt.Errorf("create session %s/%s: agent %q has no directory %s (expected an existing agent): %w",
			agent, id, agent, agentDir, bs.ErrNotFound)
	}
	dir := filepath.Join(agentDir, "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return bs.SessionRef{}, fmt.Errorf("create session %s/%s: %w", agent, id, err)
	}
	path := filepath.Join(dir, id+".jsonl")
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if err := createNoReplace(path, buf.Bytes()); err != nil {
		return bs.SessionRef{}, fmt.Errorf("create session %s/%s: %w", agent, id, err)
	}
	return bs.SessionRef{Backend: bs.BackendJSONL, Agent: agent, ID: id, Path: path}, nil
}

// checkNewSession validates the lines of a new session and returns its id.
func checkNewSession(agent string, lines [][]byte) (string, error) {
	if bs.CheckSegment(agent) != nil {
		return "", fmt.Errorf("agent %q: expected an agent name (one path segment): %w", agent, bs.ErrInvalid)
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("no lines: expected a session header and entries: %w", bs.ErrInvalid)
	}
	for i, l := range lines {
		if bytes.IndexByte(l, '\n') >= 0 {
			return "", fmt.Errorf("line %d: holds a line break, expected one JSON object on one line: %w", i+1, bs.ErrInvalid)
		}
		if t := bytes.TrimSpace(l); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
			return "", fmt.Errorf("line %d: expected one JSON object, found %q: %w", i+1, clip(l, 60), bs.ErrInvalid)
		}
	}
	var h struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if err := json.Unmarshal(lines[0], &h); err != nil || h.Type != "session" {
		return "", fmt.Errorf("line 1: expected a session header {\"type\":\"session\",\"id\":…}, found %q: %w", clip(lines[0], 60), bs.ErrInvalid)
	}
	if err := bs.IDSessionFile.Check(h.ID); err != nil {
		return "", fmt.Errorf("line 1: %w", err)
	}
	return h.ID, nil
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// createNoReplace writes data to a new file at path, durably, failing when
// path exists (atomicfile.WriteNew: a temp file hard-linked to path, or an
// exclusive create where the file system has no hard links).
func createNoReplace(path string, data []byte) error {
	err := atomicfile.WriteNew(path, data, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists (a new session never replaces one): %w", path, bs.ErrInvalid)
	}
	return err
}
