package doctor

import (
	"context"
	"fmt"
	"sort"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// LeftoverReport is the host's leftovers: the totals per agent and kind,
// and every file. It is the "leftovers" member of `brainsurgeon doctor
// --json` and of GET /api/doctor.
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

// ScanLeftovers asks st for the host's leftovers, when it is a
// brainsurgeon.LeftoverScanner, keeps those of the agents keep accepts
// (every agent when keep is nil) and sums them per agent and kind. A failed
// scan is reported in Skipped; only a cancelled ctx is an error.
func ScanLeftovers(ctx context.Context, st bs.Store, keep func(agent string) bool) (LeftoverReport, error) {
	out := LeftoverReport{Agents: []LeftoverAgent{}, Files: []bs.Leftover{}, Skipped: []string{}}
	sc, ok := st.(bs.LeftoverScanner)
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
		if keep == nil || keep(l.Agent) {
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
	out.Agents = SummarizeLeftovers(out.Files)
	return out, nil
}

// SummarizeLeftovers sums files per agent and kind, both sorted by name.
func SummarizeLeftovers(files []bs.Leftover) []LeftoverAgent {
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
