package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// GoneSessions returns the sessions whose side directory
// ("<transcript dir>/extracted/<sessionId>") remains while their transcript
// is gone: deleted, or archived by the host ("<file>.jsonl.deleted.<ts>",
// "<file>.jsonl.reset.<ts>"), for retention, which removes the values of
// deleted sessions first. It only reads.
//
// A side directory counts as gone only when all of these hold, so that a
// session is never taken for gone by mistake:
//   - the transcript directory that holds it was read completely now;
//   - no live session of a fresh discovery has it as its side directory;
//   - no other file of that transcript directory names the session id:
//     no transcript ("<id>.jsonl", "<id>-topic-<n>.jsonl", pi's
//     "<timestamp>_<id>.jsonl"), lock, checkpoint, trajectory or backup.
//     Only the host's reset and deleted archives do not count;
//   - it is a real directory (not a symbolic link) whose name is a valid
//     session id.
//
// A transcript directory that cannot be read is logged at Warn and
// skipped: its side directories are kept. The refs returned are JSONL refs
// whose Path is where the transcript "<id>.jsonl" would be, so that SideDir
// finds the side directory; they cannot be opened. For pi directories the
// ref's Label is the project dir, as for live sessions.
func (s *Store) GoneSessions(ctx context.Context) ([]bs.SessionRef, error) {
	d, err := s.discover(ctx)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(d.Sessions))
	for _, ref := range d.Sessions {
		if dir, err := SideDir(ref); err == nil {
			live[dir] = true
		}
	}
	log := bs.LoggerOrDiscard(s.Logger)
	root, err := os.ReadDir(d.Root)
	if err != nil {
		return nil, fmt.Errorf("gone sessions: read %s: %w", d.Root, err)
	}
	var out []bs.SessionRef
	for _, e := range root {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		var dir, agent, label string
		switch d.Layout {
		case LayoutPi:
			if !isPiProjectDir(name) {
				continue
			}
			dir, label = filepath.Join(d.Root, name), name
		default:
			dir, agent = filepath.Join(d.Root, name, "sessions"), name
		}
		refs, err := s.goneIn(ctx, dir, live)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			log.Warn("side data of this directory is kept: it cannot be read to tell which sessions are gone", "dir", dir, "error", err)
		}
		for _, id := range refs {
			out = append(out, bs.SessionRef{Backend: bs.BackendJSONL, Agent: agent, ID: id, Label: label,
				Path: filepath.Join(dir, id+".jsonl")})
		}
	}
	return out, nil
}

// goneIn returns the ids of the gone sessions of one transcript directory
// (see GoneSessions): side directories under dir/extracted that neither a
// live session in live nor a file of dir names.
func (s *Store) goneIn(ctx context.Context, dir string, live map[string]bool) ([]string, error) {
	var sides []string
	if s.SideNames != nil {
		names, err := s.SideNames(ctx, filepath.Join(dir, SideDirName))
		if err != nil {
			return nil, err
		}
		sides = names
	} else {
		ents, err := os.ReadDir(filepath.Join(dir, SideDirName))
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() {
				sides = append(sides, e.Name())
			}
		}
	}
	if len(sides) == 0 {
		return nil, nil
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	named := make(map[string]bool, 2*len(files))
	for _, f := range files {
		n := f.Name()
		switch ClassifyFile(n) {
		case FileKindResetArchive, FileKindDeletedArchive:
			continue
		}
		for _, id := range idsNamedBy(n) {
			named[id] = true
		}
	}
	var out []string
	for _, id := range sides {
		// Dot names are temp or hidden dirs, never a session's.
		if strings.HasPrefix(id, ".") || bs.CheckSegment(id) != nil || named[id] || live[filepath.Join(dir, SideDirName, id)] {
			continue
		}
		out = append(out, id)
	}
	return out, nil
}

// idsNamedBy returns the session ids a file name in a transcript directory
// may belong to: its stem up to the first dot ("<id>.jsonl",
// "<id>.jsonl.lock", "<id>.checkpoint.<uuid>.jsonl"), that stem without a
// "-topic-<n>" suffix, and the part after its last "_" (pi's
// "<timestamp>_<uuid>.jsonl").
func idsNamedBy(name string) []string {
	stem, _, _ := strings.Cut(name, ".")
	ids := []string{stem}
	if i := strings.Index(stem, "-topic-"); i > 0 {
		ids = append(ids, stem[:i])
	}
	if i := strings.LastIndexByte(stem, '_'); i >= 0 && i+1 < len(stem) {
		ids = append(ids, stem[i+1:])
	}
	return ids
}
