package trash

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// ItemLeftovers is the Kind of an item that holds host leftovers
// collected by Collect (an item without a Kind holds sessions).
const ItemLeftovers = "leftovers"

// filesDir is the directory, inside an item, that holds its leftovers at
// their paths relative to the agents dir.
const filesDir = "files"

// File is one leftover file of an item.
type File struct {
	// Leftover is the file as the scan found it; its Path is where it was
	// and where Restore puts it back.
	bs.Leftover
	// Name is the file's name inside the item's directory:
	// "files/<its path relative to the agents dir>" (slash-separated),
	// unique because paths are, and keeping an import archive's layout.
	Name string `json:"name"`
	// Mode is the file's permission bits when it was collected; Restore
	// gives them back.
	Mode uint32 `json:"mode"`
}

// CollectOptions tunes Collect.
type CollectOptions struct {
	// IncludeUnique lets Collect take files that still hold unique
	// history; without it they are skipped.
	IncludeUnique bool
}

// Collect moves host leftovers into one trash item, from which Restore
// puts every file back byte-identical and CleanExpired deletes them once
// the item expires. Files that hold unique history are skipped unless
// opts.IncludeUnique. A file that changed since the scan (size,
// modification time or inode) or vanished stops the collect: what was
// moved is moved back and the error (wrapping brainsurgeon.ErrChanged)
// names the file. It returns the item, or nil when nothing was to be
// collected.
//
// Every file must be a regular file inside the agents dir (not in the
// state dir) with one of the Leftover… kinds, named once; else nothing
// moves and the error wraps brainsurgeon.ErrInvalid. The item's meta.json
// is written first ("state": "trashing"), then every file is re-stat'ed
// and moved through the Store, then the item is marked "trashed" and one
// audit event "collect" (files_removed, bytes_removed, trash_id) is
// written. A crash in between leaves a "trashing" item that Restore puts
// back. A failure moves back the files already moved, never over a file
// created in a place meanwhile: such a file's copy stays in the item
// (kept, "trashing") and the error wraps ErrOccupied naming the place.
func (t *Trash) Collect(ctx context.Context, files []bs.Leftover, opts CollectOptions) (*Item, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	root, err := filepath.Abs(t.AgentsDir)
	if err != nil {
		return nil, fmt.Errorf("trash collect: %w", err)
	}
	var take []File
	seen := map[string]bool{}
	for _, l := range files {
		if l.Unique && !opts.IncludeUnique {
			continue
		}
		f, err := t.checkLeftover(root, l)
		if err != nil {
			return nil, fmt.Errorf("trash collect: %w", err)
		}
		if seen[f.Path] {
			return nil, fmt.Errorf("trash collect: %s is listed twice: %w", f.Path, bs.ErrInvalid)
		}
		seen[f.Path] = true
		take = append(take, f)
	}
	if len(take) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := bs.Now(t.Clock).UTC()
	keep := t.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	item := &Item{Format: Format, ID: itemID(bs.SessionRef{Agent: ItemLeftovers, ID: "collect"}, now), Kind: ItemLeftovers,
		State: StateTrashing, TrashedAt: now, ExpiresAt: now.Add(keep), Leftovers: take, Sessions: []Session{}}
	idir := filepath.Join(t.dir(), item.ID)
	if err := os.MkdirAll(idir, 0o700); err != nil {
		return nil, fmt.Errorf("trash collect: %w", err)
	}
	if err := t.writeMeta(item); err != nil {
		os.RemoveAll(idir)
		return nil, fmt.Errorf("trash collect: %w", err)
	}
	var undo []func() error
	fail := func(err error) (*Item, error) {
		if errors.Is(err, errCrash) {
			return nil, err
		}
		if uerr := undoAll(undo); uerr != nil {
			t.log().Error("trash: collect failed and could not be fully undone; restore the item to put everything back",
				"trash_id", item.ID, "error", err, "undo_error", uerr)
			return nil, fmt.Errorf("trash collect: %w (undo failed, item %s kept: %w)", err, item.ID, uerr)
		}
		os.RemoveAll(idir)
		_ = atomicfile.SyncDir(t.dir())
		return nil, fmt.Errorf("trash collect: %w; nothing was moved", err)
	}
	var total int64
	for i, f := range take {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if err := same(f.Leftover); err != nil {
			return fail(err)
		}
		from, to := f.Path, filepath.Join(idir, filepath.FromSlash(f.Name))
		if err := t.Store.Move(from, to); err != nil {
			return fail(fmt.Errorf("leftover %s: %w", from, err))
		}
		undo = append(undo, func() error { return moveBack(to, from) })
		total += f.Bytes
		if failpoint != nil {
			if err := failpoint(fmt.Sprintf("leftover:%d", i)); err != nil {
				return fail(err)
			}
		}
	}
	item.State = StateTrashed
	item.Files, item.Bytes = countFiles(idir)
	if err := t.writeMeta(item); err != nil {
		return fail(err)
	}
	yes := true
	n := len(take)
	t.audit(audit.Event{Action: "collect", Path: root, MovedToTrash: &yes, TrashID: item.ID, FilesRemoved: &n, BytesRemoved: &total})
	t.log().Info("leftovers moved to the trash", "trash_id", item.ID, "files", n, "bytes", total, "actor", t.Actor)
	return item, nil
}

// isLeftoverKind reports whether kind is one of the Leftover… kinds.
func isLeftoverKind(kind string) bool {
	switch kind {
	case bs.LeftoverDeleted, bs.LeftoverReset, bs.LeftoverBackup, bs.LeftoverTemp, bs.LeftoverCorrupt,
		bs.LeftoverCheckpoint, bs.LeftoverTrajectory, bs.LeftoverOrphan, bs.LeftoverImportArchive:
		return true
	}
	return false
}

// checkLeftover validates a leftover handed to Collect and returns it as
// the File of an item.
func (t *Trash) checkLeftover(root string, l bs.Leftover) (File, error) {
	if !isLeftoverKind(l.Kind) {
		return File{}, fmt.Errorf("leftover %s: kind %q, expected one of the leftover kinds (deleted, reset, bak, tmp, corrupt, checkpoint, trajectory, orphan_transcript, import_archive): %w",
			l.Path, l.Kind, bs.ErrInvalid)
	}
	rel, err := relInside(root, l.Path)
	if err != nil {
		return File{}, err
	}
	state, _ := filepath.Abs(t.StateDir)
	if r, err := filepath.Rel(state, filepath.Clean(l.Path)); err == nil && !strings.HasPrefix(r, "..") {
		return File{}, fmt.Errorf("leftover %s is in BrainSurgeon's state dir %s, expected a host file: %w", l.Path, state, bs.ErrInvalid)
	}
	fi, err := os.Lstat(l.Path)
	if err != nil {
		return File{}, fmt.Errorf("leftover %s: %w: %w", l.Path, err, bs.ErrChanged)
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("leftover %s is a %s, expected a regular file: %w", l.Path, fi.Mode().Type(), bs.ErrInvalid)
	}
	return File{Leftover: l, Name: filesDir + "/" + filepath.ToSlash(rel), Mode: uint32(fi.Mode().Perm())}, nil
}

// relInside returns p relative to root, or an error wrapping ErrInvalid
// when p is not an absolute path strictly inside root.
func relInside(root, p string) (string, error) {
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || !filepath.IsAbs(p) || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("leftover %q: expected an absolute path inside the agents dir %s: %w", p, root, bs.ErrInvalid)
	}
	return rel, nil
}

// same checks, right before a move, that the file is still the one the
// scan found: same size, modification time and inode (when the scan had
// one). Otherwise the error wraps brainsurgeon.ErrChanged and names it.
func same(l bs.Leftover) error {
	fi, err := os.Lstat(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("leftover %s vanished since the scan: %w", l.Path, bs.ErrChanged)
	}
	if err != nil {
		return fmt.Errorf("leftover %s: %w", l.Path, err)
	}
	var what []string
	if !fi.Mode().IsRegular() {
		what = append(what, "is no longer a regular file")
	}
	if fi.Size() != l.Bytes {
		what = append(what, fmt.Sprintf("size %d, the scan found %d", fi.Size(), l.Bytes))
	}
	if !fi.ModTime().Equal(l.ModTime) {
		what = append(what, fmt.Sprintf("modified %s, the scan found %s", fi.ModTime().UTC().Format(bs.TimestampLayout), l.ModTime.UTC().Format(bs.TimestampLayout)))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && l.Inode != 0 && uint64(st.Ino) != l.Inode { //nolint:unconvert // uint32 on some platforms
		what = append(what, fmt.Sprintf("inode %d, the scan found %d (replaced)", st.Ino, l.Inode))
	}
	if len(what) > 0 {
		return fmt.Errorf("leftover %s changed since the scan (%s): %w", l.Path, strings.Join(what, "; "), bs.ErrChanged)
	}
	return nil
}

// checkLeftoverItem checks that an item of leftovers names only places
// inside the agents dir and files inside its own directory.
func (t *Trash) checkLeftoverItem(item *Item) error {
	root, err := filepath.Abs(t.AgentsDir)
	if err != nil {
		return err
	}
	for _, f := range item.Leftovers {
		if _, err := relInside(root, f.Path); err != nil {
			return fmt.Errorf("meta.json: %w", err)
		}
		clean := path.Clean(f.Name)
		if clean != f.Name || !strings.HasPrefix(clean, filesDir+"/") || strings.Contains(f.Name, `\`) {
			return fmt.Errorf("meta.json names the file %q, expected a clean path under %s/: %w", f.Name, filesDir, bs.ErrInvalid)
		}
	}
	return nil
}

// restoreLeftovers puts the files of an item of leftovers back, with
// their modification time and mode, then removes the item. It refuses,
// moving nothing, when a place is occupied; a place the host fills while
// the files move back is never overwritten: that file stays in the item
// and the error wraps ErrOccupied.
func (t *Trash) restoreLeftovers(item *Item) (*Item, error) {
	id := item.ID
	if err := t.checkLeftoverItem(item); err != nil {
		return nil, fmt.Errorf("trash restore %s: %w", id, err)
	}
	idir := filepath.Join(t.dir(), id)
	type mv struct {
		from string
		f    File
	}
	var moves []mv
	var busy []string
	for _, f := range item.Leftovers {
		src := filepath.Join(idir, filepath.FromSlash(f.Name))
		switch {
		case exists(src):
			if exists(f.Path) {
				busy = append(busy, f.Path)
			}
			moves = append(moves, mv{src, f})
		case !exists(f.Path):
			return nil, fmt.Errorf("trash restore %s: the leftover %s is neither in the trash (%s) nor in its place: %w", id, f.Path, f.Name, bs.ErrNotFound)
		}
	}
	if len(busy) > 0 {
		return nil, fmt.Errorf("trash restore %s: %s: %w", id, strings.Join(busy, ", "), ErrOccupied)
	}
	var n int
	var b int64
	for i, m := range moves {
		if failpoint != nil {
			if err := failpoint(fmt.Sprintf("restore-leftover:%d", i)); err != nil {
				return nil, err
			}
		}
		if err := moveBack(m.from, m.f.Path); err != nil {
			return nil, fmt.Errorf("trash restore %s: %w (restore again to finish)", id, err)
		}
		if err := keepStamp(m.f); err != nil {
			return nil, fmt.Errorf("trash restore %s: %w (restore again to finish)", id, err)
		}
		n++
		b += m.f.Bytes
	}
	if err := os.RemoveAll(idir); err != nil {
		return nil, fmt.Errorf("trash restore %s: everything is back, but the item could not be removed: %w", id, err)
	}
	_ = atomicfile.SyncDir(t.dir())
	t.audit(audit.Event{Action: "trash_restore", Path: t.AgentsDir, TrashID: id, FilesRemoved: &n, BytesRemoved: &b})
	t.log().Info("leftovers restored from the trash", "trash_id", id, "files", n, "bytes", b, "actor", t.Actor)
	return item, nil
}

// moveBack moves a leftover from the trash back to its place, never
// over a file there: the host may have written one meanwhile. Then the
// trashed copy stays where it is and the error, wrapping ErrOccupied,
// names the place.
func moveBack(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return fmt.Errorf("leftover %s: %w", to, err)
	}
	if err := atomicfile.RenameNoReplace(from, to); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("leftover %s: a file was created in its place meanwhile; the trashed copy %s is kept: %w", to, from, ErrOccupied)
		}
		return fmt.Errorf("leftover %s: move back from %s: %w", to, from, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(to)); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(from))
}

// keepStamp gives a restored file its recorded mode and modification
// time when they differ (a rename keeps both; this mends a file touched
// in the trash).
func keepStamp(f File) error {
	fi, err := os.Lstat(f.Path)
	if err != nil {
		return err
	}
	if f.Mode != 0 && uint32(fi.Mode().Perm()) != f.Mode {
		if err := os.Chmod(f.Path, fs.FileMode(f.Mode)); err != nil {
			return err
		}
	}
	if !f.ModTime.IsZero() && !fi.ModTime().Equal(f.ModTime) {
		return os.Chtimes(f.Path, f.ModTime, f.ModTime)
	}
	return nil
}
