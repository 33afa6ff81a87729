package api

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/doctor"
)

// DoctorReport is the answer of GET /api/doctor: the same shape as
// `brainsurgeon doctor --json` without "fixes" and "collect" (the API
// fixes and collects nothing).
type DoctorReport struct {
	// Sessions holds the diagnosis of every session diagnosed, in the
	// order the store lists them.
	Sessions []doctor.Report `json:"sessions"`
	// Errors lists the sessions that could not be diagnosed, each with
	// the reason: an empty list when every session was (where the CLI
	// leaves the member out).
	Errors []SessionError `json:"errors"`
	// Leftovers is the report of the host's leftovers.
	Leftovers LeftoverReport `json:"leftovers"`
}

// SessionError is a session that could not be diagnosed.
type SessionError struct {
	// Session is "agent/id".
	Session string `json:"session"`
	Error   string `json:"error"`
}

// LeftoverReport is the host's leftovers: the totals per agent and kind,
// and every file.
type LeftoverReport struct {
	// Available is false when the store does not scan for the host's
	// leftovers (the lists are then empty).
	Available bool `json:"available"`
	// Agents holds one row per agent with leftovers, by agent name.
	Agents []LeftoverAgent `json:"agents"`
	// Files lists every leftover found, by agent, kind and path.
	Files []bs.Leftover `json:"files"`
	// Skipped lists the files the scan could not read or classify, each
	// message naming the file, and the scan's own failure.
	Skipped []string `json:"skipped"`
}

// LeftoverAgent is the leftovers of one agent, per kind.
type LeftoverAgent struct {
	Agent string `json:"agent"`
	// Kinds holds one row per kind found, by kind name.
	Kinds []LeftoverKind `json:"kinds"`
}

// LeftoverKind sums the leftovers of one agent and kind.
type LeftoverKind struct {
	// Kind is one of the brainsurgeon.Leftover… kinds.
	Kind string `json:"kind"`
	// Count counts the files; Bytes sums their sizes, DiskBytes the space
	// they take on disk.
	Count     int   `json:"count"`
	Bytes     int64 `json:"bytes"`
	DiskBytes int64 `json:"disk_bytes"`
	// Oldest is the oldest modification time among the files.
	Oldest time.Time `json:"oldest"`
	// Unique counts the files that still hold history that exists nowhere
	// else; UniqueBytes sums their sizes.
	Unique      int   `json:"unique"`
	UniqueBytes int64 `json:"unique_bytes"`
}

// doctor returns the Doctor over the API's stores and the request's
// Restorer (whose queue tells the pending write-backs).
func (s *server) doctor() *doctor.Doctor {
	return &doctor.Doctor{Store: s.set.Store, Side: s.set.Side, Restorer: s.restorerFor(), Logger: s.log}
}

// listDoctor returns the Doctor of the sessions list: it checks that the
// side store lists a record for each placeholder without reading the
// values (doctor.ValuesListed), and reads the write-back queue once for
// the whole list. The session detail and GET /api/doctor verify every
// value (s.doctor).
func (s *server) listDoctor() *doctor.Doctor {
	d := s.doctor()
	d.Values = doctor.ValuesListed
	return d.WithQueue()
}

// doctorReport answers GET /api/doctor?agent=: a diagnosis of every
// session (of one agent) and the leftovers report. Both are computed on
// the request, read-only; cancelling the request stops them.
func (s *server) doctorReport(r *http.Request) (any, error) {
	agent := r.URL.Query().Get("agent")
	if agent != "" {
		if err := checkSegment(agent); err != nil {
			return nil, fmt.Errorf("%w: %w", segmentError("agent", err), bs.ErrInvalid)
		}
	}
	ctx := r.Context()
	refs, err := s.listRefs(ctx, agent)
	if err != nil {
		return nil, err
	}
	reports := make([]*doctor.Report, len(refs))
	errs := make([]error, len(refs))
	if len(refs) > 0 {
		doc := s.doctor()
		work := make(chan int)
		var wg sync.WaitGroup
		for range min(runtime.GOMAXPROCS(0), len(refs), 8) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					reports[i], errs[i] = doc.Diagnose(ctx, refs[i])
				}
			}()
		}
	feed:
		for i := range refs {
			select {
			case work <- i:
			case <-ctx.Done():
				break feed
			}
		}
		close(work)
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	out := DoctorReport{Sessions: []doctor.Report{}, Errors: []SessionError{}}
	for i, rep := range reports {
		switch {
		case errs[i] != nil:
			out.Errors = append(out.Errors, SessionError{Session: refs[i].String(), Error: errs[i].Error()})
		case rep != nil:
			out.Sessions = append(out.Sessions, *rep)
		}
	}
	out.Leftovers, err = s.leftovers(ctx, agent)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// leftovers scans the host's leftovers (of one agent when agent is not
// empty) when the store can. A failed scan is reported in Skipped, as the
// CLI does; a cancelled request is an error.
func (s *server) leftovers(ctx context.Context, agent string) (LeftoverReport, error) {
	out := LeftoverReport{Agents: []LeftoverAgent{}, Files: []bs.Leftover{}, Skipped: []string{}}
	sc, ok := s.set.Store.(bs.LeftoverScanner)
	if !ok {
		return out, nil
	}
	out.Available = true
	found, skipped, err := sc.Leftovers(ctx)
	if cerr := ctx.Err(); cerr != nil {
		return out, fmt.Errorf("doctor: leftovers: %w", cerr)
	}
	if err != nil {
		out.Skipped = append(out.Skipped, err.Error())
		return out, nil
	}
	for _, e := range skipped {
		out.Skipped = append(out.Skipped, e.Error())
	}
	for _, l := range found {
		if agent == "" || l.Agent == agent {
			out.Files = append(out.Files, l)
		}
	}
	sort.SliceStable(out.Files, func(i, j int) bool {
		a, b := out.Files[i], out.Files[j]
		if a.Agent != b.Agent {
			return a.Agent < b.Agent
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Path < b.Path
	})
	out.Agents = summarizeLeftovers(out.Files)
	return out, nil
}

// summarizeLeftovers sums files per agent and kind, both sorted by name.
func summarizeLeftovers(files []bs.Leftover) []LeftoverAgent {
	by := map[string]map[string]*LeftoverKind{}
	for _, l := range files {
		kinds := by[l.Agent]
		if kinds == nil {
			kinds = map[string]*LeftoverKind{}
			by[l.Agent] = kinds
		}
		k := kinds[l.Kind]
		if k == nil {
			k = &LeftoverKind{Kind: l.Kind, Oldest: l.ModTime}
			kinds[l.Kind] = k
		}
		k.Count++
		k.Bytes += l.Bytes
		k.DiskBytes += l.DiskBytes
		if l.ModTime.Before(k.Oldest) {
			k.Oldest = l.ModTime
		}
		if l.Unique {
			k.Unique++
			k.UniqueBytes += l.Bytes
		}
	}
	out := make([]LeftoverAgent, 0, len(by))
	for agent, kinds := range by {
		a := LeftoverAgent{Agent: agent, Kinds: make([]LeftoverKind, 0, len(kinds))}
		for _, k := range kinds {
			a.Kinds = append(a.Kinds, *k)
		}
		sort.Slice(a.Kinds, func(i, j int) bool { return a.Kinds[i].Kind < a.Kinds[j].Kind })
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}
