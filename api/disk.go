package api

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
)

// DiskUse is the answer of GET /api/disk: per agent, how its bytes on disk
// split into transcripts, side storage, the host's leftovers and the rest.
type DiskUse struct {
	Agents []AgentDisk `json:"agents"`
	// Total is the sum of the agents' totals, in bytes.
	Total int64 `json:"total"`
}

// AgentDisk is one agent's disk use. Total is the sum of the four parts.
type AgentDisk struct {
	Agent string `json:"agent"`
	Total int64  `json:"total"`
	// Transcripts are the live transcripts the store lists (JSONL files,
	// or OpenClaw's SQLite store with its -wal and -shm files).
	Transcripts DiskPart `json:"transcripts"`
	// Side is our side storage: the "extracted" directories.
	Side DiskPart `json:"side"`
	// Leftovers are what the host leaves beside the transcripts: locks,
	// reset and deleted archives, backups, checkpoints, corrupt copies,
	// trajectory traces and archive directories, by kind.
	Leftovers DiskPart `json:"leftovers"`
	// Other is the rest of the session directories: the session store
	// (sessions.json), temporary and unknown files.
	Other DiskPart `json:"other"`
}

// DiskPart counts files and their bytes; Kinds splits them by kind (the
// leftovers only).
type DiskPart struct {
	Files int        `json:"files"`
	Bytes int64      `json:"bytes"`
	Kinds []DiskKind `json:"kinds,omitempty"`
}

// DiskKind is one kind of leftover: "lock", "reset-archive",
// "deleted-archive", "backup", "checkpoint", "corrupt", "trajectory", or
// "dir:<name>" for a directory the host left (an import archive, cold
// storage).
type DiskKind struct {
	Kind  string `json:"kind"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

func (p *DiskPart) add(kind string, files int, n int64) {
	p.Files += files
	p.Bytes += n
	if kind == "" {
		return
	}
	for i := range p.Kinds {
		if p.Kinds[i].Kind == kind {
			p.Kinds[i].Files += files
			p.Kinds[i].Bytes += n
			return
		}
	}
	p.Kinds = append(p.Kinds, DiskKind{Kind: kind, Files: files, Bytes: n})
}

// disk answers GET /api/disk. It reads the directories of the sessions the
// store lists (no path comes from the request): each transcript's
// directory, its "extracted" tree and the SQLite stores.
func (s *server) disk(r *http.Request) (any, error) {
	refs, err := s.listRefs(r.Context(), "")
	if err != nil {
		return nil, err
	}
	by := map[string]*AgentDisk{}
	var names []string
	agent := func(name string) *AgentDisk {
		a := by[name]
		if a == nil {
			a = &AgentDisk{Agent: name}
			by[name] = a
			names = append(names, name)
		}
		return a
	}
	live := map[string]bool{}    // the listed transcripts
	dirs := map[string]string{}  // session directory → agent
	dbs := map[string]string{}   // database file → agent
	sides := map[string]string{} // side directories outside the session directories → agent
	for _, ref := range refs {
		name := agentName(ref)
		agent(name)
		file, shared, err := s.set.Backend.SessionFile(ref)
		if err != nil || file == "" {
			continue
		}
		if shared {
			dbs[file] = name
		} else {
			dirs[filepath.Dir(file)] = name
			live[file] = true
		}
		if side, err := s.set.Backend.SideDir(ref); err == nil {
			sides[side] = name
		}
	}
	for dir, name := range dirs {
		if err := r.Context().Err(); err != nil {
			return nil, err
		}
		scanSessionDir(dir, live, s.set.Backend.ClassifyFile, agent(name))
	}
	for db, name := range dbs {
		a := agent(name)
		for _, p := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
				a.Transcripts.add("", 1, fi.Size())
			}
		}
	}
	for side, name := range sides {
		if _, walked := dirs[filepath.Dir(filepath.Dir(side))]; walked && filepath.Base(filepath.Dir(side)) == "extracted" {
			continue // counted with its session directory
		}
		files, n := treeSize(side)
		agent(name).Side.add("", files, n)
	}
	sort.Strings(names)
	out := DiskUse{Agents: make([]AgentDisk, 0, len(names))}
	for _, n := range names {
		a := by[n]
		sort.Slice(a.Leftovers.Kinds, func(i, j int) bool { return a.Leftovers.Kinds[i].Bytes > a.Leftovers.Kinds[j].Bytes })
		a.Total = a.Transcripts.Bytes + a.Side.Bytes + a.Leftovers.Bytes + a.Other.Bytes
		out.Total += a.Total
		out.Agents = append(out.Agents, *a)
	}
	return out, nil
}

// scanSessionDir adds the files of one session directory to a: the live
// transcripts (listed by the store), the other files by their name's kind
// (classify; a transcript file the store does not list is "other"), the
// "extracted" tree as side storage, and any other directory as a leftover
// of its own.
func scanSessionDir(dir string, live map[string]bool, classify func(name string) string, a *AgentDisk) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			files, n := treeSize(p)
			if e.Name() == "extracted" {
				a.Side.add("", files, n)
			} else {
				a.Leftovers.add("dir:"+e.Name(), files, n)
			}
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		switch k := classify(e.Name()); k {
		case "transcript":
			if live[p] {
				a.Transcripts.add("", 1, fi.Size())
			} else {
				a.Other.add("", 1, fi.Size())
			}
		case "other", "store":
			a.Other.add("", 1, fi.Size())
		default:
			a.Leftovers.add(k, 1, fi.Size())
		}
	}
}

// treeSize counts the regular files under dir and their bytes; symbolic
// links are not followed.
func treeSize(dir string) (files int, n int64) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable or gone meanwhile: what can be read is counted
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				files++
				n += fi.Size()
			}
		}
		return nil
	})
	return files, n
}
