package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// benchSessions is the number of sessions of the scale benchmark.
const benchSessions = 10000

var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

// benchAgents builds, once per test binary, an agents dir with 10,000
// small synthetic sessions of one agent and their sessions.json.
func benchAgents(b *testing.B) string {
	b.Helper()
	benchOnce.Do(func() {
		root, err := os.MkdirTemp("", "api-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchDir = root
		dir := filepath.Join(root, "agents", "main", "sessions")
		if benchErr = os.MkdirAll(dir, 0o700); benchErr != nil {
			return
		}
		store := map[string]any{}
		for i := range benchSessions {
			id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
			f, err := os.Create(filepath.Join(dir, id+".jsonl"))
			if err != nil {
				benchErr = err
				return
			}
			_, err = synth.Generate(f, synth.Options{Size: 1, Seed: uint64(i + 1), MinResult: 200, MaxResult: 400, MinThinking: 100, MaxThinking: 200})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				benchErr = err
				return
			}
			store[fmt.Sprintf("agent:main:s%d", i)] = map[string]any{"sessionId": id, "updatedAt": 1767225600000 + i, "status": "done"}
		}
		data, _ := json.Marshal(store)
		benchErr = os.WriteFile(filepath.Join(dir, "sessions.json"), data, 0o600)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return filepath.Join(benchDir, "agents")
}

func TestMain(m *testing.M) {
	code := oracle.Run(m)
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// TestSetup says, as a skip, when the shared corpus is missing (the fixture then holds the self-made corpus).
func TestSetup(t *testing.T) { oracle.Setup(t, oracle.NeedShared) }

func listOnce(b *testing.B, client *http.Client, url string) time.Duration {
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	var ans struct {
		Total int `json:"total"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ans)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil || resp.StatusCode != 200 || ans.Total != benchSessions {
		b.Fatalf("list: status %d, %d sessions, %v", resp.StatusCode, ans.Total, err)
	}
	return d
}

func percentile(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p)
	return float64(s[i]) / float64(time.Millisecond)
}

// BenchmarkSessionsList10k measures GET /api/sessions over 10,000
// sessions: "cold-ms" is the first list of a new handler (every transcript
// read once), p50-ms and p99-ms the following lists (served from the
// stat-keyed cache: a discovery and a stat per session).
func BenchmarkSessionsList10k(b *testing.B) {
	agents := benchAgents(b)
	set, err := backend.Open(context.Background(), agents, backend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	h, err := api.New(api.Options{Installation: set.Installation, Backend: set})
	if err != nil {
		b.Fatal(err)
	}
	srv := newLoopback(b, h)
	url := srv.URL + "/api/sessions"
	cold := listOnce(b, srv.Client(), url)
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		lat = append(lat, listOnce(b, srv.Client(), url))
	}
	b.StopTimer()
	b.ReportMetric(float64(cold)/float64(time.Millisecond), "cold-ms")
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
}
