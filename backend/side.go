package backend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gofrs/flock"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/sides3"
)

// SideStoreFile is the file in the state dir that names the store holding
// the extracted values ("local" or an s3:// URL in sides3's canonical
// form). It is written when a store is first used and then only by `side
// migrate`, whose commit point it is; a side_store setting that differs
// from it is refused, so that editing the config never hides values.
const SideStoreFile = "side-store.json"

// SideStoreState is the content of SideStoreFile.
type SideStoreState struct {
	// Store is "local" or a canonical s3:// URL (sides3.Location.String).
	Store string `json:"store"`
	// Generation counts the switches made by `side migrate`.
	Generation int `json:"generation"`
	// Since is when Store became the store of the values.
	Since time.Time `json:"since"`
}

// ReadSideStoreState reads SideStoreFile of a state dir; a missing file
// gives the local store at generation 0 and found false.
func ReadSideStoreState(stateDir string) (st SideStoreState, found bool, err error) {
	data, err := os.ReadFile(filepath.Join(stateDir, SideStoreFile))
	if errors.Is(err, fs.ErrNotExist) {
		return SideStoreState{Store: config.SideStoreLocal}, false, nil
	}
	if err != nil {
		return st, false, err
	}
	if err := json.Unmarshal(data, &st); err != nil || st.Store == "" {
		return st, true, fmt.Errorf("%s: expected {\"store\": \"local\" or \"s3://…\", \"generation\": n}, found %.80q: %w", filepath.Join(stateDir, SideStoreFile), data, bs.ErrCorrupt)
	}
	return st, true, nil
}

// WriteSideStoreState writes SideStoreFile atomically (temp, fsync,
// rename, fsync of the dir).
func WriteSideStoreState(stateDir string, st SideStoreState) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(st, json.Deterministic(true))
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(stateDir, SideStoreFile), append(data, '\n'), 0o600)
}

// CanonicalSideStore returns a side_store setting in the form
// SideStoreFile keeps: "local", or the s3:// URL with every default
// spelt out.
func CanonicalSideStore(setting string) (string, error) {
	if config.IsLocalSideStore(setting) {
		return config.SideStoreLocal, nil
	}
	l, err := config.ParseS3(setting)
	if err != nil {
		return "", err
	}
	return l.String(), nil
}

// openSide opens the side store of set: the pack store beside the
// transcripts, or the object store setting names. The setting must name
// the store SideStoreFile names (no file names the local store), unless
// that store holds no value: then the setting's store is recorded there.
func openSide(ctx context.Context, setting string, set *Set, m *Multi) (bs.SideStore, error) {
	want, err := CanonicalSideStore(setting)
	if err != nil {
		return nil, err
	}
	st, found, err := ReadSideStoreState(set.StateDir)
	if err != nil {
		return nil, err
	}
	if st.Store != want {
		// The values stay where side-store.json says unless that store
		// holds none (a fresh install, a setting fixed before any pass).
		empty, err := sideStoreEmpty(ctx, st.Store, set.Installation, m)
		if !empty {
			where := fmt.Sprintf("%s, as %s says", st.Store, filepath.Join(set.StateDir, SideStoreFile))
			if !found {
				where = "the local pack store beside the transcripts"
			}
			if err != nil {
				where += fmt.Sprintf(" (which cannot be read to tell whether it holds any: %v)", err)
			}
			return nil, fmt.Errorf("side_store is %s but the extracted values are in %s: run `brainsurgeon side migrate --to %s` to move them, or set side_store back: %w",
				want, where, orLocal(setting), bs.ErrInvalid)
		}
		if err := WriteSideStoreState(set.StateDir, SideStoreState{Store: want, Generation: st.Generation, Since: time.Now().UTC()}); err != nil {
			return nil, fmt.Errorf("record the side store: %w", err)
		}
	}
	gate := SideGate(set.StateDir, SideStoreState{Store: want, Generation: st.Generation})
	if want == config.SideStoreLocal {
		d := sidedir.New(m)
		d.Gate = gate
		return d, nil
	}
	s3, err := OpenSideStore(setting, set.Installation, m)
	if err != nil {
		return nil, err
	}
	s3.Store.Gate = gate
	return s3, nil
}

// SideLockFile is the lock file in the state dir that every change of
// the side store's units holds shared (SideGate) and `side migrate`
// holds exclusively while it switches stores.
const SideLockFile = "side.lock"

// SideGate returns the Gate of a side store opened as the store of st:
// each change of its units holds SideLockFile shared and first checks
// that SideStoreFile still names that store at that generation. When it
// does not (`side migrate` switched stores since), the change is refused
// with an error wrapping brainsurgeon.ErrChanged, so no transcript comes
// to name a value the store in use lacks.
func SideGate(stateDir string, st SideStoreState) func(ctx context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		if err := os.MkdirAll(stateDir, 0o700); err != nil {
			return nil, fmt.Errorf("side store lock: %w", err)
		}
		fl := flock.New(filepath.Join(stateDir, SideLockFile))
		ok, err := fl.TryRLockContext(ctx, 20*time.Millisecond)
		if err != nil || !ok {
			return nil, fmt.Errorf("side store lock %s: %v: %w", fl.Path(), err, bs.ErrBusy)
		}
		now, _, err := ReadSideStoreState(stateDir)
		if err == nil && (now.Store != st.Store || now.Generation != st.Generation) {
			err = fmt.Errorf("the extracted values moved to %s (side migrate, generation %d) after this process opened %s: nothing was written; run again: %w",
				now.Store, now.Generation, st.Store, bs.ErrChanged)
		}
		if err != nil {
			fl.Unlock()
			return nil, err
		}
		return func() { fl.Unlock() }, nil
	}
}

// OpenSideStore opens the object store setting names for the sessions
// of inst, located by dirs: its keys name each side directory relative
// to the agents dir ("agents/…"), the pi sessions dir ("pi/…") or the
// state dir ("state/…", the trash); its spool is "<state dir>/spool".
// It sends no request.
func OpenSideStore(setting string, inst bs.Installation, dirs sidedir.Locator) (*sides3.Store, error) {
	return sides3.Open(setting, canonicalLocator{dirs}, sides3.Options{Roots: sideRoots(inst), Spool: filepath.Join(canonicalPath(inst.StateDir), "spool")})
}

// sideRoots returns the directories under which the side directories of
// inst lie, canonical, each with its name in the object store's keys.
func sideRoots(inst bs.Installation) []sides3.Root {
	roots := []sides3.Root{{Name: "agents", Dir: canonicalPath(inst.AgentsDir)}, {Name: "state", Dir: canonicalPath(inst.StateDir)}}
	if inst.PiSessionsDir != "" {
		roots = append(roots, sides3.Root{Name: "pi", Dir: canonicalPath(inst.PiSessionsDir)})
	}
	return roots
}

// canonicalLocator gives the side dirs of a Locator made absolute and
// free of symbolic links, as the roots of the object store are.
type canonicalLocator struct{ sidedir.Locator }

// SideDir returns the canonical side dir of ref.
func (l canonicalLocator) SideDir(ref bs.SessionRef) (string, error) {
	d, err := l.Locator.SideDir(ref)
	if err != nil {
		return "", err
	}
	return canonicalPath(d), nil
}

// canonicalPath returns p absolute with the symbolic links of its longest
// existing parent resolved.
func canonicalPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	var rest []string
	for cur := abs; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if filepath.Dir(cur) == cur {
			return abs
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
	}
}

// LocalSideDirs returns the side directories of the local pack store
// under the roots of inst (the agents dir, the pi sessions dir, the state
// dir's trash) that hold at least one file: every directory named
// "<id>" in a directory named "extracted". limit > 0 stops after that many.
func LocalSideDirs(ctx context.Context, inst bs.Installation, limit int) ([]string, error) {
	var out []string
	stop := errors.New("enough")
	for _, r := range sideRoots(inst) {
		err := filepath.WalkDir(r.Dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if p == r.Dir && errors.Is(err, fs.ErrNotExist) {
					return filepath.SkipDir
				}
				return nil // an unreadable dir holds nothing we can move
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if !e.IsDir() || filepath.Base(filepath.Dir(p)) != session.SideDirName || p == r.Dir {
				return nil
			}
			ents, err := os.ReadDir(p)
			if err == nil && len(ents) > 0 {
				out = append(out, p)
				if limit > 0 && len(out) >= limit {
					return stop
				}
			}
			return filepath.SkipDir
		})
		if errors.Is(err, stop) {
			break
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// sideStoreEmpty reports whether the store store (a canonical setting)
// holds no value of inst: no local side directory holds a file, or the
// object store's prefix of this host holds no object.
func sideStoreEmpty(ctx context.Context, store string, inst bs.Installation, dirs sidedir.Locator) (bool, error) {
	if store == config.SideStoreLocal {
		found, err := LocalSideDirs(ctx, inst, 1)
		return len(found) == 0 && err == nil, err
	}
	s, err := OpenSideStore(store, inst, dirs)
	if err != nil {
		return false, err
	}
	return s.Empty(ctx)
}

// orLocal returns a side_store setting, "local" for "".
func orLocal(s string) string {
	if s == "" {
		return config.SideStoreLocal
	}
	return s
}
