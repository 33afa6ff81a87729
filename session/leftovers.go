package session

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// ImportArchiveDir is the directory, in an agent's dir beside sessions/,
// where OpenClaw's SQLite importer moves the JSONL files it imported.
const ImportArchiveDir = "session-sqlite-import-archive"

// OwnTempAge is how old one of BrainSurgeon's own temp files must be to
// count as a leftover: a younger one may belong to a write in progress.
const OwnTempAge = 24 * time.Hour

// HostTempAge is how old a host's temp file ("*.tmp") must be to count as
// a leftover: a younger one may be a write in progress (the host renames
// it into place within milliseconds).
const HostTempAge = 10 * time.Minute

// OrphanAge is how long a transcript no sessions.json key names must have
// been left unmodified to count as an orphan: the host writes a new
// session's transcript before its key.
const OrphanAge = time.Hour

// LiveSet is what the live sessions of one agent hold, to judge whether a
// leftover still holds history of its own.
type LiveSet struct {
	// Sessions holds the ids of the live sessions (and their transcripts'
	// file stems).
	Sessions map[string]bool
	// Entries maps every entry id of a live session to the session's name
	// ("agent/sessionId").
	Entries map[string]string
}

// LeftoverOptions tunes LeftoversWith.
type LeftoverOptions struct {
	// Served, when not nil, reports whether another store (OpenClaw's
	// SQLite store) serves agent: its live sessions are then that store's,
	// and Live must give them. The JSONL transcripts in the sessions dir
	// of such an agent are neither live nor leftovers (the SQLite era's
	// host no longer reads them; they are not listed).
	Served func(agent string) bool
	// Live returns the live sessions of an agent Served reports.
	Live func(ctx context.Context, agent string) (*LiveSet, error)
	// Side tells whether the value of a placeholder exists; nil means the
	// side directories beside the transcripts (the JSONL era's layout,
	// which the SQLite store keeps using).
	Side bs.SideStore
	// Clock tells the time, for the age of temp files; nil is the system
	// clock.
	Clock bs.Clock
}

var _ bs.LeftoverScanner = (*Store)(nil)

// Leftovers lists the host's leftovers of every agent (LeftoversWith
// without other stores).
func (s *Store) Leftovers(ctx context.Context) ([]bs.Leftover, []error, error) {
	return s.LeftoversWith(ctx, LeftoverOptions{})
}

// LeftoversWith lists the files a host left next to its sessions that no
// live session reads. It only reads, line by line: a file is never read
// whole into memory.
//
// In an OpenClaw agents dir, per agent dir <agent>/, these are, by name
// (ClassifyFile), in sessions/ (not its subdirectories):
//   - deleted: "<id>.jsonl.deleted.<time>";
//   - reset: "<id>.jsonl.reset.<time>";
//   - bak: "<id>.jsonl.bak-<pid>-<ms>", any "….jsonl.bak…" and "*.bak";
//   - tmp: "*.tmp" (the host's, HostTempAge old at least) and
//     BrainSurgeon's own ".<name>.bs-tmp-<pid>-<random>" and
//     ".<name>.tmp-<random>" (OwnTempAge old at least);
//   - corrupt: "<id>.corrupt-<time>-<hex>.jsonl";
//   - checkpoint: "<id>.checkpoint.<uuid>.jsonl";
//   - trajectory: "<id>.trajectory.jsonl" and "<id>.trajectory-path.json"
//     whose <id> is no live session's;
//   - orphan_transcript: a live transcript's name ("<id>.jsonl") that no
//     key of the agent's sessions.json names, only when that file exists
//     and the agent is not served by another store, and only when it has
//     no lock file and was left unmodified for OrphanAge (the host writes
//     a new session's transcript before its key);
//
// and import_archive: every regular file under
// <agent>/session-sqlite-import-archive/. Never listed: a live transcript,
// a lock file (any name holding ".lock"), sessions.json and the files
// named after it (but a "sessions.json….tmp" is a temp file), dot
// directories and BrainSurgeon's state dir. Symbolic links (files or
// directories, agent dirs included) are not followed: what they point to
// may lie outside the agents dir.
//
// In a pi sessions dir, pi writes no archives: only temp and backup files
// ("*.tmp", our own temp files, "*.bak") of the project dirs are
// leftovers, and the other archive names above when a tool left them
// there; pi has no session registry, so no transcript is an orphan.
//
// Unique is true when the file holds an entry id that no live session of
// the agent has, or a placeholder "[[extracted-<key>]]" whose value is in
// the side store (of the session the file's header or name names), or
// when a key of the agent's sessions.json still refers to it in its
// compactionCheckpoints (the host may fork from a checkpoint: Why is
// "referenced by sessions.json (compactionCheckpoints of <key>)"). The
// live sessions are the transcripts the agent's sessions.json names (even
// when it names none; all of them when there is none), or those of the
// store Served names; a leftover is never judged against itself (same
// path or inode). When the sessions.json cannot be read or is not a JSON
// object of entries, which transcripts are live is unknown: no orphan is
// listed and skipped says why. Entry
// ids of temp and trajectory files count only when the file is a
// transcript (its first JSON object is a session header). Why says what
// decided. Bytes is the size (du -b), DiskBytes the allocated blocks
// times 512 (du -B1).
//
// A file that cannot be stat'ed or read is in skipped, its error naming
// it; the scan goes on. err is for a failure of the whole scan (the root
// cannot be read, ctx is done).
func (s *Store) LeftoversWith(ctx context.Context, opts LeftoverOptions) ([]bs.Leftover, []error, error) {
	d, err := s.discover(ctx)
	if err != nil {
		return nil, nil, err
	}
	sc := &leftoverScan{ctx: ctx, opts: opts, d: d, now: bs.Now(opts.Clock), live: map[string]*LiveSet{},
		self: map[string]map[string]fileID{}, stores: map[string]*agentStore{}, side: map[string]map[string]bool{}}
	if sc.opts.Side == nil {
		sc.opts.Side = sidedir.New(s)
	}
	ents, err := os.ReadDir(d.Root)
	if err != nil {
		return nil, nil, fmt.Errorf("leftovers: read %s: %w", d.Root, err)
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		name := e.Name()
		dir := filepath.Join(d.Root, name)
		if strings.HasPrefix(name, ".") || !e.IsDir() {
			continue
		}
		if d.Layout == LayoutPi {
			if isPiProjectDir(name) {
				sc.scanDir(name, dir, false)
			}
			continue
		}
		if sd := filepath.Join(dir, "sessions"); dirExists(sd) {
			sc.scanDir(name, sd, true)
		}
		if ad := filepath.Join(dir, ImportArchiveDir); dirExists(ad) {
			sc.scanArchive(name, ad)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(sc.found, func(a, b bs.Leftover) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Path, b.Path))
	})
	return sc.found, sc.skipped, nil
}

// leftoverScan is the state of one LeftoversWith call.
type leftoverScan struct {
	ctx     context.Context
	opts    LeftoverOptions
	d       *Discovery
	now     time.Time
	found   []bs.Leftover
	skipped []error
	live    map[string]*LiveSet          // agent → its live sessions, read when first needed
	self    map[string]map[string]fileID // agent → live session name → its transcript
	stores  map[string]*agentStore       // agent → its sessions.json, read when first needed
	side    map[string]map[string]bool   // side dir → the keys it holds
	keyed   map[string]bool              // transcript path → a sessions.json key names it
}

func dirExists(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

func (sc *leftoverScan) skip(err error) { sc.skipped = append(sc.skipped, err) }

func (sc *leftoverScan) served(agent string) bool {
	return sc.opts.Served != nil && agent != "" && sc.opts.Served(agent)
}

// scanDir lists the leftovers among the files of a sessions dir (or of a
// pi project dir, when openclaw is false).
func (sc *leftoverScan) scanDir(agent, dir string, openclaw bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		sc.skip(fmt.Errorf("leftovers of %s: read %s: %w", agent, dir, err))
		return
	}
	hasStore := false
	for _, e := range ents {
		if e.Name() == "sessions.json" && e.Type().IsRegular() {
			hasStore = true
		}
	}
	orphans := openclaw && hasStore && !sc.served(agent)
	if orphans {
		if st := sc.store(agent); st.err != nil {
			// Which transcripts are live is unknown: none is an orphan.
			sc.skip(fmt.Errorf("leftovers of %s: orphan transcripts not listed, since which transcripts are live is unknown: %w", agent, st.err))
			orphans = false
		}
	}
	for _, e := range ents {
		if sc.ctx.Err() != nil {
			return
		}
		if !e.Type().IsRegular() {
			continue // directories (extracted/, …) and symbolic links
		}
		name := e.Name()
		p := filepath.Join(dir, name)
		kind, sid := leftoverKind(name)
		switch {
		case kind == "":
			if !orphans || ClassifyFile(name) != FileKindTranscript || !sc.orphan(p) {
				continue
			}
			if _, err := os.Lstat(p + ".lock"); err == nil {
				continue // in use
			}
			kind, sid = bs.LeftoverOrphan, strings.TrimSuffix(name, ".jsonl")
		case kind == bs.LeftoverTrajectory:
			live, err := sc.liveSet(agent)
			if err != nil {
				sc.skip(fmt.Errorf("leftover %s: cannot tell whether session %s is live: %w", p, sid, err))
				continue
			}
			if live.Sessions[sid] {
				continue
			}
		}
		sc.add(agent, kind, sid, p)
	}
}

// agentStore is what the sessions.json of one agent says.
type agentStore struct {
	exists bool  // the agent's sessions dir holds a sessions.json
	err    error // it cannot be read or is not a JSON object of entries
	// checkpoints maps each file a key's compactionCheckpoints names
	// (cleaned, absolute) to that key; byName maps its base name.
	checkpoints, byName map[string]string
}

// fileID names a live transcript: its path and inode.
type fileID struct {
	path  string
	inode uint64
}

// store reads the sessions.json of agent (OpenClaw layout), once.
func (sc *leftoverScan) store(agent string) *agentStore {
	if st, ok := sc.stores[agent]; ok {
		return st
	}
	st := &agentStore{checkpoints: map[string]string{}, byName: map[string]string{}}
	sc.stores[agent] = st
	if sc.d.Layout != LayoutOpenClaw || agent == "" {
		return st
	}
	dir := filepath.Join(sc.d.Root, agent, "sessions")
	path := filepath.Join(dir, "sessions.json")
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			st.exists, st.err = true, fmt.Errorf("read session store %s: %w", path, err)
		}
		return st
	}
	st.exists = true
	p, err := parseStore(path)
	switch {
	case err != nil:
		st.err = fmt.Errorf("read session store %s: %w", path, err)
	case p.err != nil:
		st.err = p.err
	default:
		for _, k := range p.keys {
			for _, f := range k.entry.Checkpoints {
				fp := filepath.Clean(f)
				if !filepath.IsAbs(fp) {
					fp = filepath.Join(dir, fp)
				}
				base := f
				if i := strings.LastIndexAny(base, `/\`); i >= 0 {
					base = base[i+1:]
				}
				if _, ok := st.checkpoints[fp]; !ok {
					st.checkpoints[fp] = k.name
				}
				if _, ok := st.byName[base]; !ok && base != "" {
					st.byName[base] = k.name
				}
			}
		}
	}
	return st
}

// checkpointKey returns the sessions.json key whose compactionCheckpoints
// name the leftover at p, or "". A name in the agent's sessions dir
// matches by base name too: the registry may hold the paths of the
// machine it was copied from.
func (sc *leftoverScan) checkpointKey(agent, p string) string {
	st := sc.store(agent)
	if k, ok := st.checkpoints[filepath.Clean(p)]; ok {
		return k
	}
	if sc.d.Layout == LayoutOpenClaw && filepath.Dir(p) == filepath.Join(sc.d.Root, agent, "sessions") {
		return st.byName[filepath.Base(p)]
	}
	return ""
}

// orphan reports whether the transcript p is one discovery found without
// a sessions.json key.
func (sc *leftoverScan) orphan(p string) bool {
	if sc.keyed == nil {
		sc.keyed = make(map[string]bool, len(sc.d.Sessions))
		for _, r := range sc.d.Sessions {
			sc.keyed[r.Path] = len(sc.d.Keys(r)) > 0
		}
	}
	keyed, ok := sc.keyed[p]
	return ok && !keyed // a file discovery did not take for a transcript is not ours to judge
}

// scanArchive lists every regular file under an import archive dir.
func (sc *leftoverScan) scanArchive(agent, dir string) {
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			sc.skip(fmt.Errorf("leftovers of %s: read %s: %w", agent, p, err))
			if e != nil && e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err := sc.ctx.Err(); err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		sid := ""
		if i := strings.Index(e.Name(), ".jsonl"); i > 0 {
			// "<key slug>.<sessionId>.jsonl.imported-<ms>": the header names
			// the session; the name is the fallback.
			stem := strings.TrimSuffix(strings.TrimSuffix(e.Name()[:i], ".trajectory"), ".trajectory-path")
			if j := strings.LastIndexByte(stem, '.'); j >= 0 {
				stem = stem[j+1:]
			}
			sid = stem
		}
		sc.add(agent, bs.LeftoverImportArchive, sid, p)
		return nil
	})
	if err != nil && sc.ctx.Err() == nil {
		sc.skip(fmt.Errorf("leftovers of %s: read %s: %w", agent, dir, err))
	}
}

// leftoverKind tells a leftover's kind and session id from its name; ""
// when the name is no leftover's (orphan transcripts are told apart by the
// caller). Temp files are told by name only; their age is checked by add.
func leftoverKind(name string) (kind, sessionID string) {
	if strings.Contains(name, ".lock") {
		return "", "" // a lock, or the temp file of one
	}
	if isOwnTemp(name) || strings.HasSuffix(name, ".tmp") {
		sid, _, _ := strings.Cut(strings.TrimPrefix(name, "."), ".jsonl")
		if sid == name || strings.Contains(sid, ".") {
			sid = ""
		}
		return bs.LeftoverTemp, sid
	}
	before := func(sep string) string { s, _, _ := strings.Cut(name, sep); return s }
	switch ClassifyFile(name) {
	case FileKindDeletedArchive:
		return bs.LeftoverDeleted, before(".jsonl")
	case FileKindResetArchive:
		return bs.LeftoverReset, before(".jsonl")
	case FileKindBackup:
		sid := before(".jsonl")
		if sid == name {
			sid = ""
		}
		return bs.LeftoverBackup, sid
	case FileKindCorrupt:
		return bs.LeftoverCorrupt, strings.TrimSuffix(before(".corrupt-"), ".jsonl")
	case FileKindCheckpoint:
		return bs.LeftoverCheckpoint, before(".checkpoint.")
	case FileKindTrajectory:
		return bs.LeftoverTrajectory, before(".trajectory")
	}
	return "", ""
}

// isOwnTemp reports whether name is one of BrainSurgeon's temp files:
// ".<name>.bs-tmp-<pid>-<random>" or ".<name>.tmp-<random>".
func isOwnTemp(name string) bool {
	return strings.HasPrefix(name, ".") && (strings.Contains(name, ".bs-tmp-") || strings.Contains(name, ".tmp-"))
}

// add stats and judges one leftover.
func (sc *leftoverScan) add(agent, kind, sid, p string) {
	fi, err := os.Lstat(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.skip(fmt.Errorf("leftover %s: %w", p, err))
		}
		return
	}
	age := time.Duration(0)
	switch {
	case kind == bs.LeftoverTemp && isOwnTemp(filepath.Base(p)):
		age = OwnTempAge
	case kind == bs.LeftoverTemp:
		age = HostTempAge
	case kind == bs.LeftoverOrphan:
		age = OrphanAge
	}
	if age > 0 && sc.now.Sub(fi.ModTime()) < age {
		return
	}
	l := bs.Leftover{Agent: agent, Kind: kind, Path: p, SessionID: sid, Bytes: fi.Size(), DiskBytes: fi.Size(), ModTime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		l.DiskBytes = int64(st.Blocks) * 512 //nolint:unconvert // int32 on some platforms
		l.Inode = uint64(st.Ino)             //nolint:unconvert // uint32 on some platforms
	}
	if err := sc.judge(&l); err != nil {
		sc.skip(err)
		return
	}
	sc.found = append(sc.found, l)
}

// openLeftover opens a leftover to read it (tests make it fail).
var openLeftover = os.Open

// placeholderMark starts every placeholder.
var placeholderMark = []byte("[[extracted-")

// judge reads the leftover line by line and sets Unique and Why.
func (sc *leftoverScan) judge(l *bs.Leftover) error {
	f, err := openLeftover(l.Path)
	if err != nil {
		return fmt.Errorf("leftover %s cannot be read, so whether it holds unique history is unknown: %w", l.Path, err)
	}
	defer f.Close()
	entriesCount := l.Kind != bs.LeftoverTemp && l.Kind != bs.LeftoverTrajectory
	decided := false // the first JSON object was seen
	headerID := ""
	var live *LiveSet
	entries, missing := 0, 0
	in := map[string]bool{} // the live sessions that hold its entries
	keys := map[string]bool{}
	r := NewReader(f)
	for r.Next() {
		if r.Line()%4096 == 0 && sc.ctx.Err() != nil {
			return sc.ctx.Err()
		}
		raw := r.Raw()
		for rest := raw; ; {
			i := bytes.Index(rest, placeholderMark)
			if i < 0 {
				break
			}
			rest = rest[i+len(placeholderMark):]
			if j := bytes.Index(rest, []byte("]]")); j > 0 && j <= 200 {
				if k := string(rest[:j]); bs.CheckSideKey(k) == nil {
					keys[k] = true
				}
			}
		}
		if len(raw) == 0 || raw[0] != '{' && len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		e := r.LiteEntry()
		switch e.Kind {
		case bs.KindHeader:
			if !decided {
				headerID = strings.Clone(e.ID)
				entriesCount = true
			}
			decided = true
		case bs.KindEntry:
			decided = true
			if !entriesCount || e.ID == "" {
				continue
			}
			if live == nil {
				if live, err = sc.liveSet(l.Agent); err != nil {
					return fmt.Errorf("leftover %s: cannot tell whether its entries are in a live session: %w", l.Path, err)
				}
			}
			entries++
			if s, ok := live.Entries[e.ID]; ok && !sc.isSelf(l, s) {
				in[s] = true
			} else {
				missing++
			}
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("leftover %s cannot be read, so whether it holds unique history is unknown: %w", l.Path, err)
	}
	sid := l.SessionID
	if headerID != "" && bs.CheckSegment(headerID) == nil {
		sid = headerID
		if l.SessionID == "" || l.Kind == bs.LeftoverImportArchive {
			l.SessionID = headerID
		}
	}
	var reasons []string
	if entries > 0 {
		switch {
		case missing > 0:
			reasons = append(reasons, plural(missing, "entry", "entries")+" no live session has")
		case len(in) == 1:
			for s := range in {
				l.Why = "copy of " + s + ": every entry is in the live transcript"
			}
		default:
			names := make([]string, 0, len(in))
			for s := range in {
				names = append(names, s)
			}
			slices.Sort(names)
			l.Why = "copy: every entry is in the live sessions " + strings.Join(names, ", ")
		}
	}
	if len(keys) > 0 && sid != "" {
		have, err := sc.sideKeys(l.Agent, sid, filepath.Dir(l.Path))
		if err != nil {
			return fmt.Errorf("leftover %s: cannot tell whether its placeholders' values exist: %w", l.Path, err)
		}
		n := 0
		for k := range keys {
			if have[k] {
				n++
			}
		}
		if n > 0 {
			reasons = append(reasons, "holds "+plural(n, "placeholder", "placeholders")+" whose values are in the side store")
		}
	}
	if k := sc.checkpointKey(l.Agent, l.Path); k != "" {
		reasons = append([]string{"referenced by sessions.json (compactionCheckpoints of " + k + ")"}, reasons...)
	}
	if len(reasons) > 0 {
		l.Unique = true
		l.Why = strings.Join(reasons, "; ")
		return nil
	}
	if l.Why == "" {
		switch {
		case !entriesCount && decided:
			l.Why = "not a transcript: holds no history"
		case l.Kind == bs.LeftoverTrajectory:
			l.Why = "runtime trace of a session no longer listed"
		default:
			l.Why = "holds no transcript entries"
		}
	}
	return nil
}

// isSelf reports whether the live session named name is the leftover l
// itself (same path or same inode): a file is never a copy of itself.
func (sc *leftoverScan) isSelf(l *bs.Leftover, name string) bool {
	id, ok := sc.self[l.Agent][name]
	if !ok {
		return false
	}
	return id.path == filepath.Clean(l.Path) || id.inode != 0 && id.inode == l.Inode
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// sideKeys returns the keys of the side values of session sid of agent,
// whose transcripts lie (or lay) in the agent's sessions dir.
func (sc *leftoverScan) sideKeys(agent, sid, near string) (map[string]bool, error) {
	dir := near
	if sc.d.Layout == LayoutOpenClaw && agent != "" {
		dir = filepath.Join(sc.d.Root, agent, "sessions")
	}
	ref := bs.SessionRef{Backend: bs.BackendJSONL, Agent: agent, ID: sid, Path: filepath.Join(dir, sid+".jsonl")}
	if sc.d.Layout == LayoutPi {
		ref.Agent = ""
	}
	sd, err := SideDir(ref)
	if err != nil {
		return nil, err
	}
	if have, ok := sc.side[sd]; ok {
		return have, nil
	}
	infos, err := sc.opts.Side.List(sc.ctx, ref)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, in := range infos {
		have[in.EntryID] = true
	}
	sc.side[sd] = have
	return have, nil
}

// liveSet returns the live sessions of agent, reading them once.
func (sc *leftoverScan) liveSet(agent string) (*LiveSet, error) {
	if l, ok := sc.live[agent]; ok {
		return l, nil
	}
	var l *LiveSet
	if sc.served(agent) {
		if sc.opts.Live == nil {
			return nil, fmt.Errorf("agent %s is served by another store, and no way to read its sessions was given: %w", agent, bs.ErrInvalid)
		}
		var err error
		if l, err = sc.opts.Live(sc.ctx, agent); err != nil {
			return nil, err
		}
	} else {
		l = &LiveSet{Sessions: map[string]bool{}, Entries: map[string]string{}}
		var refs []bs.SessionRef
		// With a sessions.json that reads, the transcripts it names are
		// the live ones, even when it names none; without one (or with
		// one that does not read, when no transcript is an orphan) every
		// transcript is.
		st := sc.store(agent)
		keyed := st.exists && st.err == nil
		for _, r := range sc.d.Sessions {
			if r.Agent != agent || (sc.d.Layout == LayoutPi) {
				continue
			}
			refs = append(refs, r)
		}
		self := map[string]fileID{}
		sc.self[agent] = self
		if sc.d.Layout == LayoutPi {
			for _, r := range sc.d.Sessions {
				if r.Label == agent {
					refs = append(refs, r)
				}
			}
		}
		for _, r := range refs {
			if keyed && len(sc.d.Keys(r)) == 0 {
				continue // an orphan: a leftover itself
			}
			l.Sessions[r.ID] = true
			l.Sessions[strings.TrimSuffix(filepath.Base(r.Path), ".jsonl")] = true
			id := fileID{path: filepath.Clean(r.Path)}
			if fi, err := os.Stat(r.Path); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					id.inode = uint64(st.Ino) //nolint:unconvert // uint32 on some platforms
				}
			}
			self[r.String()] = id
			if err := readEntryIDs(sc.ctx, r.Path, r.String(), l.Entries); err != nil {
				return nil, err
			}
		}
	}
	sc.live[agent] = l
	return l, nil
}

// readEntryIDs adds the entry ids of the transcript at p to ids, reading
// it line by line.
func readEntryIDs(ctx context.Context, p, name string, ids map[string]string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("read live transcript %s: %w", p, err)
	}
	defer f.Close()
	r := NewReader(f)
	for r.Next() {
		if r.Line()%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if e := r.LiteEntry(); e.Kind == bs.KindEntry && e.ID != "" {
			if _, ok := ids[e.ID]; !ok {
				ids[strings.Clone(e.ID)] = name
			}
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("read live transcript %s: %w", p, err)
	}
	return nil
}
