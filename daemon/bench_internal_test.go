package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/config"
)

// writeMany writes agents × perAgent tiny OpenClaw sessions with a
// sessions.json per agent, all last written an hour before now.
func writeMany(tb testing.TB, root string, agents, perAgent int) string {
	tb.Helper()
	agentsDir := filepath.Join(root, "agents")
	old := time.Now().Add(-time.Hour)
	for a := 0; a < agents; a++ {
		agent := fmt.Sprintf("agent%02d", a)
		dir := filepath.Join(agentsDir, agent, "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		index := map[string]any{}
		for i := 0; i < perAgent; i++ {
			id := fmt.Sprintf("00000000-0000-4000-8000-%06x%06x", a, i)
			path := filepath.Join(dir, id+".jsonl")
			line := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`+"\n"+
				`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`+"\n", id)
			if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
				tb.Fatal(err)
			}
			if err := os.Chtimes(path, old, old); err != nil {
				tb.Fatal(err)
			}
			index[fmt.Sprintf("agent:%s:s%d", agent, i)] = map[string]any{"sessionId": id, "updatedAt": old.UnixMilli(), "status": "done", "sessionFile": path}
		}
		data, _ := json.Marshal(index)
		if err := os.WriteFile(filepath.Join(dir, "sessions.json"), data, 0o600); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, "sessions.json"), old, old); err != nil {
			tb.Fatal(err)
		}
	}
	return agentsDir
}

// BenchmarkTickUnchanged10k measures a scheduled tick over 10,000 sessions
// of which none changed (target: 50 ms or less): the listing and one stat
// per session, no transcript read.
func BenchmarkTickUnchanged10k(b *testing.B) {
	agentsDir := writeMany(b, b.TempDir(), 10, 1000)
	ctx := context.Background()
	c := config.Default()
	c.Enabled = true
	now := time.Now().UTC()
	c.LastRunAt = &now
	if err := config.Save(agentsDir, c); err != nil {
		b.Fatal(err)
	}
	d, err := Open(ctx, Options{AgentsDir: agentsDir, Open: opener(agentsDir)})
	if err != nil {
		b.Fatal(err)
	}
	check := func(r *PruneResult, err error) {
		if err != nil || r.Sessions != 10000 || r.Unchanged != 10000 || r.Processed != 0 {
			b.Fatalf("tick = %+v, %v; want 10,000 unchanged sessions", r, err)
		}
	}
	// The first tick after a start reads them all (they changed within
	// age_threshold_hours of last_run_at) and marks them.
	if r, err := d.runPrune(ctx, false); err != nil || r.Processed != 10000 {
		b.Fatalf("first tick = %+v, %v; want 10,000 sessions processed", r, err)
	}
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		check(d.runPrune(ctx, false))
		n++
	}
	// On a shared machine the wall time depends on the load; the CPU time
	// the process spent (all goroutines, GC included) does much less.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/1e6, "cpu-ms/op")
}

// cpuTime returns the user and system CPU time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
