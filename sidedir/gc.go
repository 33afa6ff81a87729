package sidedir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// dropLocks serialises DropUnits per side directory.
var dropLocks sync.Map // dir → *sync.Mutex

func dropLock(dir string) *sync.Mutex {
	m, _ := dropLocks.LoadOrStore(dir, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// gcUnit is one unit of a side dir as surveyed.
type gcUnit struct {
	bs.SideUnit
	path string
	ix   *packIndex  // packs only; nil when unreadable
	info os.FileInfo // per-entry files only
}

// errUnreadable stands for the error of a pack whose index survey could
// not read (the unit holds it).
var errUnreadable = errors.New("unreadable pack index")

// gcSurvey is what a side dir holds: its units and, per entry, where its
// newest state is.
type gcSurvey struct {
	dir    string
	units  []*gcUnit // oldest first
	byName map[string]*gcUnit
	// newest maps an entry to the unit holding its newest record; tomb to
	// the unit whose deletion is its newest state (and tombTime its time).
	newest   map[string]*gcUnit
	tomb     map[string]*gcUnit
	tombTime map[string]time.Time
	// holders maps an entry to every unit holding a record of it.
	holders map[string][]*gcUnit
}

// survey is surveyCtx without a context, for tests.
func (d *Store) survey(dir string) (*gcSurvey, error) {
	return d.surveyCtx(context.Background(), dir)
}

// surveyCtx reads a side dir's packs and per-entry files and decides, by
// the newest-record rule (newest) as Get does, which unit holds the
// newest state of each entry.
func (d *Store) surveyCtx(ctx context.Context, dir string) (*gcSurvey, error) {
	s := &gcSurvey{dir: dir, byName: map[string]*gcUnit{}, newest: map[string]*gcUnit{}, tomb: map[string]*gcUnit{},
		tombTime: map[string]time.Time{}, holders: map[string][]*gcUnit{}}
	m := d.medium()
	ents, err := m.List(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side dir %s: %w", m.Describe(dir, ""), err)
	}
	var packs []*gcUnit
	files := map[string]*gcUnit{} // by file name
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		u := &gcUnit{path: m.Describe(dir, name)}
		u.Name, u.Size = name, info.Size()
		switch {
		case isPackName(name):
			u.Kind = bs.SideUnitPack
			ix, err := d.index(ctx, dir, name, u.path)
			if err != nil {
				u.Err, u.Time = err.Error(), parsePackTime(name)
			} else {
				u.ix, u.Time = ix, ix.PassTime
			}
			packs = append(packs, u)
		default:
			id, ok := sideFileID(name)
			if !ok {
				continue
			}
			u.Kind, u.Time, u.info = bs.SideUnitFile, info.ModTime(), info
			files[name] = u
			s.holders[id] = append(s.holders[id], u)
		}
		s.units = append(s.units, u)
		s.byName[name] = u
	}
	// Packs newest first, as Get reads them.
	sort.Slice(packs, func(i, j int) bool { return packs[i].Name > packs[j].Name })
	names := make([]string, len(packs))
	ids := map[string]bool{}
	for i, u := range packs {
		names[i] = u.Name
		if u.ix == nil {
			continue
		}
		for id := range u.ix.Entries {
			s.holders[id] = append(s.holders[id], u)
			ids[id] = true
		}
		for id := range u.ix.Deleted {
			ids[id] = true
		}
	}
	for name := range files {
		id, _ := sideFileID(name)
		ids[id] = true
	}
	index := func(name, _ string) (*packIndex, error) {
		if u := s.byName[name]; u != nil && u.ix != nil {
			return u.ix, nil
		}
		return nil, errUnreadable
	}
	file := func(name string) os.FileInfo {
		if u := files[name]; u != nil {
			return u.info
		}
		return nil
	}
	where := func(name string) string {
		if u := s.byName[name]; u != nil {
			return u.path
		}
		return m.Describe(dir, name)
	}
	for id := range ids {
		b, ok, _ := newest(id, names, where, index, file)
		if !ok {
			continue
		}
		u := s.byName[b.name]
		if b.deleted {
			s.tomb[id], s.tombTime[id] = u, b.time
		} else {
			s.newest[id] = u
		}
	}
	for _, u := range s.units {
		if u.Err != "" {
			continue
		}
		if u.Kind == bs.SideUnitFile {
			id, _ := sideFileID(u.Name)
			if s.newest[id] == u {
				u.Live = []string{id}
			} else {
				u.Stale = 1
			}
			continue
		}
		for id := range u.ix.Entries {
			if s.newest[id] == u {
				u.Live = append(u.Live, id)
			} else {
				u.Stale++
			}
		}
		for id := range u.ix.Deleted {
			if s.tomb[id] == u && len(s.holders[id]) > 0 {
				u.Masks++
			}
		}
		sort.Strings(u.Live)
	}
	sort.SliceStable(s.units, func(i, j int) bool {
		if !s.units[i].Time.Equal(s.units[j].Time) {
			return s.units[i].Time.Before(s.units[j].Time)
		}
		return s.units[i].Name < s.units[j].Name
	})
	return s, nil
}

// SideUnits lists the session's side units, oldest first: each pack (its
// age is its pass time) and each per-entry file (ours and the first
// BrainSurgeon's, a unit of one), with the entries whose newest record it
// holds. A pack whose index cannot be read is listed with Err set and the
// pass time of its name. Records still in the pending pack (not yet
// synced) are not listed.
func (d *Store) SideUnits(ctx context.Context, ref bs.SessionRef) ([]bs.SideUnit, error) {
	dir, err := d.dir(ref)
	if err != nil {
		return nil, err
	}
	s, err := d.surveyCtx(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]bs.SideUnit, len(s.units))
	for i, u := range s.units {
		out[i] = u.SideUnit
	}
	return out, nil
}

// DropUnits removes the named units of a session, first copying the live
// records of the entries in keep that they hold, and the deletions that
// still hide older records elsewhere, into one new pack: written under a
// temp name, fsynced, renamed, directory fsynced (the Medium's Commit and
// Sync), and only then the old units removed (and the directory fsynced
// again). A crash leaves the old units or the new pack (or both, holding
// the same records), never neither. The new pack carries the newest pass
// time of the units, so its records keep their age. The store's caches
// forget the removed units.
func (d *Store) DropUnits(ctx context.Context, ref bs.SessionRef, units []string, keep []string) (bs.SideDropResult, error) {
	var res bs.SideDropResult
	dir, err := d.dir(ref)
	if err != nil {
		return res, err
	}
	mu := dropLock(dir)
	mu.Lock()
	defer mu.Unlock()
	s, err := d.surveyCtx(ctx, dir)
	if err != nil {
		return res, err
	}
	in := map[*gcUnit]bool{}
	var doomed []*gcUnit
	var passTime time.Time
	for _, n := range units {
		u := s.byName[n]
		if u == nil {
			return res, fmt.Errorf("drop side units of %s: no unit %q in %s: %w", ref, n, dir, bs.ErrNotFound)
		}
		if in[u] {
			continue
		}
		in[u] = true
		doomed = append(doomed, u)
		if u.Time.After(passTime) {
			passTime = u.Time
		}
	}
	if len(doomed) == 0 {
		return res, nil
	}
	kept := map[string]bool{}
	for _, id := range keep {
		if u := s.newest[id]; u != nil && in[u] {
			kept[id] = true
		}
	}
	for u := range in {
		for _, id := range u.Live {
			if !kept[id] {
				res.Dropped++
			}
		}
	}
	tombs := map[string]time.Time{}
	for id, u := range s.tomb {
		if !in[u] {
			continue
		}
		for _, h := range s.holders[id] {
			if !in[h] {
				tombs[id] = s.tombTime[id]
				break
			}
		}
	}
	if len(kept) > 0 || len(tombs) > 0 {
		name, size, err := d.repack(ctx, s, kept, tombs, passTime)
		if err != nil {
			return res, fmt.Errorf("repack side data of %s: %w", ref, err)
		}
		res.Pack, res.Kept, res.Freed = name, len(kept), -size
	}
	var errs []error
	m := d.medium()
	release, err := d.gate(ctx)
	if err != nil {
		return res, fmt.Errorf("drop side units of %s: the repacked records are kept in %s: %w", ref, res.Pack, err)
	}
	defer release()
	for _, u := range doomed {
		if err := m.Remove(ctx, dir, u.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", u.path, err))
			continue
		}
		res.Removed++
		res.Freed += u.Size
	}
	d.forget(dir, doomed)
	if err := m.Sync(ctx, dir, false); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("drop side units of %s: %w", ref, errors.Join(errs...))
	}
	return res, nil
}

// forget drops the cached indexes of removed units and the dir's listing.
func (d *Store) forget(dir string, units []*gcUnit) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range units {
		d.forgetIndex(u.path)
	}
	delete(d.lists, dir)
}

// forgetPath drops the cached index of a removed unit and the listing of
// its dir.
func (d *Store) forgetPath(dir, path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgetIndex(path)
	delete(d.lists, dir)
}

// packsChanged reports whether dir's packs differ from packs, a listing
// taken earlier (a DropUnits replaced some meanwhile), reading the dir
// afresh.
func (d *Store) packsChanged(ctx context.Context, dir string, packs []string) bool {
	d.mu.Lock()
	delete(d.lists, dir)
	d.mu.Unlock()
	now, err := d.packs(ctx, dir)
	return err == nil && !slices.Equal(now, packs)
}

// repack writes one pack holding the newest records of kept and the
// deletions tombs, with the given pass time, and returns its name and
// size once it is durable under its final name.
func (d *Store) repack(ctx context.Context, s *gcSurvey, kept map[string]bool, tombs map[string]time.Time, passTime time.Time) (string, int64, error) {
	return d.repackInto(ctx, d, s, kept, tombs, passTime, "")
}

// repackInto is repack writing the pack into the same location of dst,
// under name when it is not "" (else a new pack name).
func (d *Store) repackInto(ctx context.Context, dst *Store, s *gcSurvey, kept map[string]bool, tombs map[string]time.Time, passTime time.Time, name string) (string, int64, error) {
	ids := make([]string, 0, len(kept))
	for id := range kept {
		ids = append(ids, id)
	}
	// In the order of their frames, so that each frame is decoded once.
	sort.Slice(ids, func(i, j int) bool {
		ui, uj := s.newest[ids[i]], s.newest[ids[j]]
		if ui.path != uj.path {
			return ui.path < uj.path
		}
		if ui.Kind != bs.SideUnitFile && uj.Kind != bs.SideUnitFile {
			ei, ej := ui.ix.Entries[ids[i]], uj.ix.Entries[ids[j]]
			if ei.Offset != ej.Offset {
				return ei.Offset < ej.Offset
			}
			if ei.Start != ej.Start {
				return ei.Start < ej.Start
			}
		}
		return ids[i] < ids[j]
	})
	m := dst.medium()
	f, _, err := m.Create(ctx, s.dir)
	if err != nil {
		return "", 0, err
	}
	tmp := f.Name()
	fail := func(err error) (string, int64, error) {
		f.Close()
		os.Remove(tmp)
		return "", 0, err
	}
	ix := &packIndex{Format: PackFormat, Entries: map[string]packEntry{}}
	if len(tombs) > 0 {
		ix.Deleted = tombs
	}
	enc := d.encoder()
	defer d.putEncoder(enc)
	var off int64
	// Records are gathered into frames of about frameTarget bytes, as Put
	// does.
	var group []byte
	var members []packEntry
	var memberIDs []string
	flush := func() error {
		if len(members) == 0 {
			return nil
		}
		frame := enc.EncodeAll(group, make([]byte, 0, len(group)/4+64))
		if _, err := f.Write(frame); err != nil {
			return fmt.Errorf("write pack %s: %w", tmp, err)
		}
		for k, e := range members {
			e.Offset, e.Length = off, int64(len(frame))
			ix.Entries[memberIDs[k]] = e
		}
		off += int64(len(frame))
		group, members, memberIDs = group[:0], members[:0], memberIDs[:0]
		return nil
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		u := s.newest[id]
		data, t, err := d.readUnitRecord(ctx, s.dir, u, id)
		if err != nil {
			return fail(err)
		}
		members = append(members, packEntry{Start: int64(len(group)), Size: int64(len(data)), CRC32C: recordCRC(data), Time: t})
		memberIDs = append(memberIDs, id)
		group = append(group, data...)
		if len(group) >= frameTarget {
			if err := flush(); err != nil {
				return fail(err)
			}
		}
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	name, size, err := dst.finishNamed(ctx, s.dir, f, off, ix, passTime, name)
	if err != nil {
		return "", 0, err
	}
	if err := m.Sync(ctx, s.dir, false); err != nil {
		// The new pack may not survive a crash: keep the old units.
		return "", 0, err
	}
	return name, size, nil
}

// readUnitRecord reads the record of id from a unit of dir, checked, with
// the time it was written.
func (d *Store) readUnitRecord(ctx context.Context, dir string, u *gcUnit, id string) ([]byte, time.Time, error) {
	if u.Kind == bs.SideUnitFile {
		data, err := d.readFile(ctx, dir, u.Name)
		return data, u.Time, err
	}
	e := u.ix.Entries[id]
	f, err := d.medium().Open(ctx, dir, u.Name)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("pack %s: %w", u.path, err)
	}
	defer f.Close()
	data, err := d.readFrame(f, u.path, id, e, true)
	t := e.Time
	if t.IsZero() {
		t = u.Time
	}
	return data, t, err
}

// RemoveSideIfEmpty removes the session's side directory when it is empty
// and no pass of this store is writing a pack into it, and fsyncs its
// parent. It reports whether it removed the directory; a directory that
// holds anything, or does not exist, is left without error.
func (d *Store) RemoveSideIfEmpty(ctx context.Context, ref bs.SessionRef) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	dir, err := d.dir(ref)
	if err != nil {
		return false, err
	}
	mu := dropLock(dir)
	mu.Lock()
	defer mu.Unlock()
	d.mu.Lock()
	busy := d.pending[dir] != nil
	d.mu.Unlock()
	if busy {
		return false, nil
	}
	// The file system's rmdir removes only an empty directory: whatever
	// appeared in it since it was listed keeps it.
	removed, err := d.medium().RemoveLoc(ctx, dir)
	if !removed {
		if err != nil {
			return false, fmt.Errorf("remove empty side dir of %s: %w", ref, err)
		}
		return false, nil
	}
	d.mu.Lock()
	delete(d.lists, dir)
	d.mu.Unlock()
	if err != nil {
		return true, fmt.Errorf("after removing the empty side dir of %s: %w", ref, err)
	}
	return true, nil
}
