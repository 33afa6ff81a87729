// Package demo writes a sample OpenClaw agents dir for `brainsurgeon serve
// --demo` and for tests: JSONL sessions with large tool results and
// thinking blocks (internal/synth), a sessions.json per agent, and old
// modification times, so that every session is idle and has values old
// enough to extract.
package demo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// Options shape a demo agents dir. Zero fields get the defaults noted.
type Options struct {
	// Agents names the agents (default "main" and "research").
	Agents []string
	// Sessions is the number of sessions per agent (default 2).
	Sessions int
	// Size is each transcript's size in bytes (default 256 KiB).
	Size int64
	// Age is how long ago the transcripts were last written (default 2h):
	// older than the idle period, so they may be pruned.
	Age time.Duration
	// Now is the current time (default time.Now()).
	Now time.Time
	// GrowingUsage makes the assistant messages record a usage that grows
	// with the session (synth.Options.GrowingUsage), as a real session's
	// does; without it every turn records the same.
	GrowingUsage bool
}

// Session describes one generated session.
type Session struct {
	Agent, ID, Key, Path string
}

// Write creates "<root>/agents" with the demo sessions and returns the
// agents dir and the sessions. root must exist.
func Write(root string, o Options) (string, []Session, error) {
	if len(o.Agents) == 0 {
		o.Agents = []string{"main", "research"}
	}
	if o.Sessions <= 0 {
		o.Sessions = 2
	}
	if o.Size <= 0 {
		o.Size = 256 << 10
	}
	if o.Age <= 0 {
		o.Age = 2 * time.Hour
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	agentsDir := filepath.Join(root, "agents")
	mtime := o.Now.Add(-o.Age)
	var out []Session
	seed := uint64(1)
	for _, agent := range o.Agents {
		dir := filepath.Join(agentsDir, agent, "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", nil, fmt.Errorf("demo: %w", err)
		}
		index := map[string]any{}
		for i := 0; i < o.Sessions; i++ {
			id := "00000000-0000-4000-8000-" + fmt.Sprintf("%012x", seed)
			path := filepath.Join(dir, id+".jsonl")
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return "", nil, fmt.Errorf("demo: %w", err)
			}
			// Entries one minute apart, ending a day before mtime: all of
			// them older than the default age threshold (24 h).
			start := mtime.Add(-24*time.Hour - 2*time.Duration(o.Size/2000)*time.Minute)
			_, err = synth.Generate(f, synth.Options{Size: o.Size, Seed: seed, MinResult: 1500, MaxResult: 12000,
				MinThinking: 600, MaxThinking: 3000, Start: start.UTC(), GrowingUsage: o.GrowingUsage})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", nil, fmt.Errorf("demo: %w", err)
			}
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				return "", nil, fmt.Errorf("demo: %w", err)
			}
			key := "agent:" + agent + ":main"
			if i > 0 {
				key = fmt.Sprintf("agent:%s:task-%d", agent, i)
			}
			index[key] = map[string]any{"sessionId": id, "updatedAt": mtime.UnixMilli(), "status": "done",
				"sessionFile": path, "chatType": "direct", "label": fmt.Sprintf("demo %s session %d", agent, i+1)}
			out = append(out, Session{Agent: agent, ID: id, Key: key, Path: path})
			seed++
		}
		data, err := json.MarshalIndent(index, "", "  ")
		if err != nil {
			return "", nil, fmt.Errorf("demo: %w", err)
		}
		sj := filepath.Join(dir, "sessions.json")
		if err := os.WriteFile(sj, data, 0o600); err != nil {
			return "", nil, fmt.Errorf("demo: %w", err)
		}
		if err := os.Chtimes(sj, mtime, mtime); err != nil {
			return "", nil, fmt.Errorf("demo: %w", err)
		}
	}
	return agentsDir, out, nil
}
