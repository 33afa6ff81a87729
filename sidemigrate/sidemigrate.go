// Package sidemigrate moves the extracted values of an installation
// between side stores: the pack store beside the transcripts ("local")
// and an S3-compatible object store (an s3:// setting). It is what
// `brainsurgeon side migrate` runs.
//
// The rule it keeps: at every instant, the store that the state dir's
// side-store.json names holds every value any transcript refers to.
// The source is never changed. Every pack is copied under its own name
// and read back from the target and checked (sha256, index, every
// record's size and CRC-32C) before it counts as arrived; per-entry
// files of earlier versions are folded into one pack per location. Then,
// holding the side store's lock exclusively (every process holds it
// shared around each change of the units, see backend.SideGate), a last
// round copies what passes wrote meanwhile, the config's side_store is
// changed, and side-store.json names the target with the next generation:
// that write is the commit point. A process that opened the old store
// can no longer change it (its change fails with ErrChanged and its
// transcript is untouched); reads of the old store keep working, since
// the source keeps every value.
//
// Progress is kept in the state dir's side-migrate.json, so a run that
// was interrupted (a crash, a kill, a network failure) resumes where it
// stopped when run again.
package sidemigrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gofrs/flock"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/sides3"
)

// StateFile is the file in the state dir that records a migration in
// progress: where from, where to, and which units arrived.
const StateFile = "side-migrate.json"

// Options tell Run what to move.
type Options struct {
	// Set is the installation, opened with the store its values are in.
	Set *backend.Set
	// To is the target: "local" or an s3:// setting.
	To string
	// Replace lets the target hold units of this host that the source
	// lacks (left by an earlier migration; retention dropped them from
	// the source since): they are removed at the switch. Without it Run
	// refuses such a target.
	Replace bool
	// Progress, when set, is told of each location done.
	Progress func(p Progress)
	// Logger receives one record per round; nil discards.
	Logger bs.Logger
}

// Progress is where a run is.
type Progress struct {
	Round     int    `json:"round"`
	Location  string `json:"location"`
	Done      int    `json:"done"`
	Locations int    `json:"locations"`
}

// Report is what Run did. Its JSON names are the output of `side
// migrate --json`.
type Report struct {
	// From and To are the stores, canonical.
	From string `json:"from"`
	To   string `json:"to"`
	// Phase is "switched" when the values moved and the config names To,
	// "already" when they were there already.
	Phase string `json:"phase"`
	// Generation is side-store.json's generation after the run.
	Generation int `json:"generation"`
	// Locations counts the side locations of the source.
	Locations int `json:"locations"`
	// Packs counts their packs; PacksCopied those sent by this run.
	Packs       int   `json:"packs"`
	PacksCopied int   `json:"packs_copied"`
	BytesCopied int64 `json:"bytes_copied"`
	// Verified counts the units read back from the target and checked by
	// this run, Records the records in them.
	Verified int `json:"verified"`
	Records  int `json:"records"`
	// ConvertedFiles counts the per-entry files folded into packs.
	ConvertedFiles int `json:"converted_files"`
	// Replaced counts the target's own units removed (Options.Replace).
	Replaced int `json:"replaced"`
	// Rounds counts the copy rounds, the last one under the lock.
	Rounds int `json:"rounds"`
	// SourceKept says where the source's copy of the values remains.
	SourceKept string `json:"source_kept"`
	// Duration is how long the run took.
	Duration string `json:"duration"`
}

// state is the content of StateFile.
type state struct {
	From      string              `json:"from"`
	To        string              `json:"to"`
	StartedAt time.Time           `json:"started_at"`
	Verified  map[string][]string `json:"verified"`
}

// store is one side of a migration.
type store struct {
	name string // canonical setting
	side *sidedir.Store
	s3   *sides3.Store // nil for the local store
}

// Run moves the values of o.Set to o.To (see the package doc). It
// returns the report, and an error that says what failed; run again to
// resume. A target that is where the values are already is no error.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	set := o.Set
	if set == nil {
		return nil, fmt.Errorf("side migrate: no installation: %w", bs.ErrInvalid)
	}
	to, err := backend.CanonicalSideStore(o.To)
	if err != nil {
		return nil, err
	}
	cur, _, err := backend.ReadSideStoreState(set.StateDir)
	if err != nil {
		return nil, err
	}
	rep := &Report{From: cur.Store, To: to, Generation: cur.Generation}
	if cur.Store == to {
		rep.Phase = "already"
		// A crash after the commit point left the config behind: set it.
		if err := setConfig(ctx, set.AgentsDir, o.To); err != nil {
			return rep, err
		}
		os.Remove(filepath.Join(set.StateDir, StateFile))
		return rep, nil
	}
	st, err := loadState(set.StateDir, cur.Store, to)
	if err != nil {
		return rep, err
	}
	src, err := open(set, cur.Store)
	if err != nil {
		return rep, err
	}
	dst, err := open(set, to)
	if err != nil {
		return rep, err
	}
	for _, s := range []store{src, dst} {
		if s.s3 != nil {
			if err := s.s3.Check(ctx); err != nil {
				return rep, err
			}
		}
	}
	log := bs.LoggerOrDiscard(o.Logger)
	extras, err := extraUnits(ctx, set, src, dst)
	if err != nil {
		return rep, err
	}
	if len(extras) > 0 && !o.Replace {
		n := 0
		for _, names := range extras {
			n += len(names)
		}
		return rep, fmt.Errorf("side migrate: %s already holds %d units of this host in %d locations that %s lacks (left by an earlier migration): --replace makes the target an exact copy: %w",
			to, n, len(extras), cur.Store, bs.ErrInvalid)
	}
	// Copy rounds while passes may write: until a round copies little.
	for round := 1; ; round++ {
		copied, err := copyRound(ctx, set, src, dst, st, rep, round, o.Progress)
		rep.Rounds = round
		if err != nil {
			return rep, err
		}
		log.Info("side migrate: copy round done", "round", round, "packs_copied", copied, "to", to)
		if copied < 20 || round >= 5 {
			break
		}
	}
	// The switch: no process changes the source meanwhile.
	fl := flock.New(filepath.Join(set.StateDir, backend.SideLockFile))
	if ok, err := fl.TryLockContext(ctx, 50*time.Millisecond); err != nil || !ok {
		return rep, fmt.Errorf("side migrate: lock %s: %v: %w", fl.Path(), err, bs.ErrBusy)
	}
	defer fl.Unlock()
	rep.Rounds++
	if _, err := copyRound(ctx, set, src, dst, st, rep, rep.Rounds, o.Progress); err != nil {
		return rep, err
	}
	if o.Replace {
		// Computed again under the lock: what the source lacks now.
		if extras, err = extraUnits(ctx, set, src, dst); err != nil {
			return rep, err
		}
		for loc, names := range extras {
			for _, name := range names {
				if err := dst.side.Medium.Remove(ctx, loc, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return rep, fmt.Errorf("side migrate: remove %s from the target: %w", dst.side.Medium.Describe(loc, name), err)
				}
				rep.Replaced++
			}
			if err := dst.side.Medium.Sync(ctx, loc, false); err != nil {
				return rep, err
			}
		}
	}
	if err := setConfig(ctx, set.AgentsDir, o.To); err != nil {
		return rep, err
	}
	next := backend.SideStoreState{Store: to, Generation: cur.Generation + 1, Since: time.Now().UTC()}
	if err := backend.WriteSideStoreState(set.StateDir, next); err != nil {
		return rep, fmt.Errorf("side migrate: every value arrived and the config names %s, but %s could not be written: %w (run side migrate again)", to, backend.SideStoreFile, err)
	}
	rep.Phase, rep.Generation = "switched", next.Generation
	os.Remove(filepath.Join(set.StateDir, StateFile))
	rep.SourceKept = cur.Store
	if cur.Store == config.SideStoreLocal {
		rep.SourceKept = "the local side directories (extracted/ beside the transcripts)"
	}
	rep.Duration = time.Since(start).Round(time.Millisecond).String()
	log.Info("side migrate: switched", "from", cur.Store, "to", to, "generation", next.Generation, "packs_copied", rep.PacksCopied, "bytes_copied", rep.BytesCopied)
	return rep, nil
}

// open opens the store a canonical setting names for set's sessions,
// without a Gate: the migration changes only the target, which no other
// process uses yet.
func open(set *backend.Set, name string) (store, error) {
	locator, ok := set.Store.(sidedir.Locator)
	if !ok {
		return store{}, fmt.Errorf("side migrate: the installation's store locates no side directories: %w", bs.ErrUnsupported)
	}
	if name == config.SideStoreLocal {
		d := sidedir.New(locator)
		d.Medium = sidedir.FileSystem
		return store{name: name, side: d}, nil
	}
	s, err := backend.OpenSideStore(name, set.Installation, locator)
	if err != nil {
		return store{}, err
	}
	return store{name: name, side: s.Store, s3: s}, nil
}

// locations returns the side locations of a store that hold units.
func locations(ctx context.Context, set *backend.Set, s store) ([]string, error) {
	if s.s3 != nil {
		return s.s3.Locations(ctx)
	}
	return backend.LocalSideDirs(ctx, set.Installation, 0)
}

// copyRound transfers every location of src into dst and reports how many
// packs it sent.
func copyRound(ctx context.Context, set *backend.Set, src, dst store, st *state, rep *Report, round int, progress func(Progress)) (int, error) {
	locs, err := locations(ctx, set, src)
	if err != nil {
		return 0, fmt.Errorf("side migrate: list the locations of %s: %w", src.name, err)
	}
	rep.Locations, rep.Packs = len(locs), 0
	copied := 0
	for i, loc := range locs {
		if err := ctx.Err(); err != nil {
			return copied, err
		}
		done := st.Verified[loc]
		ts, err := src.side.TransferTo(ctx, dst.side, loc,
			func(name string) bool { return slices.Contains(done, name) },
			func(name string) { done = append(done, name) })
		st.Verified[loc] = done
		rep.Packs += ts.Packs
		rep.PacksCopied += ts.Copied
		rep.BytesCopied += ts.Bytes
		rep.Verified += ts.Verified
		rep.Records += ts.Records
		if round == 1 {
			rep.ConvertedFiles += ts.Converted
		}
		copied += ts.Copied
		if serr := saveState(set.StateDir, st); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return copied, fmt.Errorf("side migrate: %w (run again to resume)", err)
		}
		if progress != nil {
			progress(Progress{Round: round, Location: loc, Done: i + 1, Locations: len(locs)})
		}
	}
	return copied, nil
}

// extraUnits returns, by location, the packs the target holds that the
// source lacks (the folded packs of per-entry files excepted: the source
// holds their records as files).
func extraUnits(ctx context.Context, set *backend.Set, src, dst store) (map[string][]string, error) {
	locs, err := locations(ctx, set, dst)
	if err != nil {
		return nil, fmt.Errorf("side migrate: list the locations of %s: %w", dst.name, err)
	}
	out := map[string][]string{}
	for _, loc := range locs {
		theirs, err := units(ctx, dst.side.Medium, loc)
		if err != nil {
			return nil, err
		}
		ours, err := units(ctx, src.side.Medium, loc)
		if err != nil {
			return nil, err
		}
		for _, n := range theirs {
			if !slices.Contains(ours, n) && !sidedir.IsFoldedPack(loc, n) {
				out[loc] = append(out[loc], n)
			}
		}
	}
	return out, nil
}

// units lists the pack names of loc on m.
func units(ctx context.Context, m sidedir.Medium, loc string) ([]string, error) {
	ents, err := m.List(ctx, loc)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if sidedir.IsPackName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// setConfig writes side_store into the config file beside agentsDir,
// the other fields as they are.
func setConfig(ctx context.Context, agentsDir, setting string) error {
	c, err := config.Load(ctx, agentsDir, nil)
	if err != nil {
		return fmt.Errorf("side migrate: read the config: %w", err)
	}
	if c.SideStore == setting {
		return nil
	}
	c.SideStore = setting
	if err := config.Save(agentsDir, c); err != nil {
		return fmt.Errorf("side migrate: write side_store into the config: %w", err)
	}
	return nil
}

// loadState reads StateFile, or starts one for from → to; a file of
// another migration is refused.
func loadState(stateDir, from, to string) (*state, error) {
	p := filepath.Join(stateDir, StateFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &state{From: from, To: to, StartedAt: time.Now().UTC(), Verified: map[string][]string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("side migrate: %s: %v: %w (remove it to start over)", p, err, bs.ErrCorrupt)
	}
	if st.From != from || st.To != to {
		return nil, fmt.Errorf("side migrate: %s records a migration from %s to %s, not from %s to %s: finish that one (side migrate --to %s) or remove the file: %w",
			p, st.From, st.To, from, to, st.To, bs.ErrInvalid)
	}
	if st.Verified == nil {
		st.Verified = map[string][]string{}
	}
	return &st, nil
}

// saveState writes StateFile atomically.
func saveState(stateDir string, st *state) error {
	data, err := json.Marshal(st, json.Deterministic(true))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(stateDir, StateFile), data, 0o600)
}

// Status returns the migration in progress recorded in the state dir,
// or nil.
func Status(stateDir string) (*StatusReport, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", filepath.Join(stateDir, StateFile), err, bs.ErrCorrupt)
	}
	r := &StatusReport{From: st.From, To: st.To, StartedAt: st.StartedAt, Locations: len(st.Verified)}
	for _, names := range st.Verified {
		r.Verified += len(names)
	}
	return r, nil
}

// StatusReport describes a migration in progress.
type StatusReport struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	StartedAt time.Time `json:"started_at"`
	Locations int       `json:"locations"`
	Verified  int       `json:"verified"`
}
