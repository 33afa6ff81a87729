package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// fixture is a temp agents dir with synthetic JSONL sessions (agent
// "alpha"), a copy of a corpus transcript (agent "corpus") and, when
// withSQLite, a copy of a corpus SQLite store (agent "main"). Without the
// shared directory the corpus transcript and store are self-made.
type fixture struct {
	root      string // the parent of agents (the OpenClaw state dir)
	agents    string
	set       *backend.Set
	originals map[string][]byte // JSONL path → bytes before any pass
	synthIDs  []string
	corpusID  string
}

const corpusTranscript = "ReinforcementSleeping__openclaw-backup/agents/main/sessions/ea774ff3-e94f-41d2-aba0-a6a1c80697e4.jsonl"
const corpusStore = "ReinforcementSleeping__openclaw-backup/agents/main/agent/openclaw-agent.sqlite"

func writeSynth(tb testing.TB, dir, id string, o synth.Options) {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(dir, id+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := synth.Generate(f, o); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// bigSession writes one synthetic transcript of about 10 MB as the only
// session of agent alpha in a new agents dir and opens that dir (no quiet
// period), for the benchmarks of requests on a big session.
func bigSession(tb testing.TB) (*backend.Set, string) {
	tb.Helper()
	root := tb.TempDir()
	dir := filepath.Join(root, "agents", "alpha", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	id := "00000000-0000-4000-8000-000000000001"
	writeSynth(tb, dir, id, synth.Options{Size: 10 << 20, Seed: 3})
	writeSessionsJSON(tb, dir, "alpha", []string{id})
	set, err := backend.Open(context.Background(), filepath.Join(root, "agents"), backend.Options{Idle: 0})
	if err != nil {
		tb.Fatal(err)
	}
	return set, id
}

func writeSessionsJSON(tb testing.TB, dir, agent string, ids []string) {
	tb.Helper()
	m := map[string]any{}
	for _, id := range ids {
		m["agent:"+agent+":"+id[len(id)-4:]] = map[string]any{"sessionId": id, "updatedAt": 1767225600000, "status": "done"}
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "sessions.json"), b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// newFixture builds the agents dir and runs a first extraction pass over
// it, so that sessions have placeholders and side values.
func newFixture(tb testing.TB, withSQLite bool) *fixture {
	tb.Helper()
	root := tb.TempDir()
	f := &fixture{root: root, agents: filepath.Join(root, "agents"), originals: map[string][]byte{}}
	alpha := filepath.Join(f.agents, "alpha", "sessions")
	if err := os.MkdirAll(alpha, 0o700); err != nil {
		tb.Fatal(err)
	}
	for i := range 3 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		writeSynth(tb, alpha, id, synth.Options{Size: 120 << 10, Seed: uint64(i + 1), MinResult: 1000, MaxResult: 4000})
		f.synthIDs = append(f.synthIDs, id)
	}
	writeSessionsJSON(tb, alpha, "alpha", f.synthIDs)
	// The real corpus when the shared directory is there, else the self-made one.
	if shared, ok := oracle.SharedOptional(tb); ok {
		f.corpusID = strings.TrimSuffix(filepath.Base(corpusTranscript), ".jsonl")
		copyFile(tb, filepath.Join(shared, "corpus", "openclaw", corpusTranscript),
			filepath.Join(f.agents, "corpus", "sessions", f.corpusID+".jsonl"))
		if withSQLite {
			copyFile(tb, filepath.Join(shared, "corpus", "openclaw-sqlite", corpusStore),
				filepath.Join(f.agents, "main", "agent", "openclaw-agent.sqlite"))
		}
	} else {
		f.corpusID = "5e1f0000-0000-4000-8000-000000000001"
		for _, sf := range testcorpus.SelfMadeFiles() {
			if sf.Name == "v3-openclaw.jsonl" {
				p := filepath.Join(f.agents, "corpus", "sessions", f.corpusID+".jsonl")
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					tb.Fatal(err)
				}
				if err := os.WriteFile(p, sf.Data, 0o600); err != nil {
					tb.Fatal(err)
				}
			}
		}
		if withSQLite {
			testcorpus.WriteStore(tb, f.agents, "main", testcorpus.SelfMadeStoreSessions("main")...)
		}
	}
	_ = filepath.WalkDir(f.agents, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			f.originals[p] = b
		}
		return nil
	})
	set, err := backend.Open(context.Background(), f.agents, backend.Options{Idle: 0})
	if err != nil {
		tb.Fatal(err)
	}
	f.set = set
	rep, err := prune.New(set.Store, set.Side, set.StateDir, pruneConfig(), nil).Run(context.Background(), nil)
	if err != nil {
		tb.Fatalf("first pass: %v", err)
	}
	for _, s := range rep.Sessions {
		if s.Status == prune.StatusError {
			tb.Fatalf("first pass: %s: %s", s.Session, s.Note)
		}
	}
	return f
}

// pruneConfig extracts everything it may, at once.
func pruneConfig() config.Config {
	c := config.Default()
	c.Enabled, c.IdleSeconds, c.AgeThresholdHours, c.MinSavingTokens = true, 0, 0, 0
	return c
}

// testClock is a clock a test moves: retention's, in the tests that run
// retention as if hours had passed. It is safe for concurrent use.
type testClock struct {
	mu  sync.Mutex
	now func() time.Time
}

// Now returns the time the test set, the system's until it sets one.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

func (c *testClock) setNow(now func() time.Time) {
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// newDaemon opens the real daemon over set's agents dir (not started: its
// jobs run when a request asks), with the runtime config pruneConfig and
// retention telling the time by the system clock. It is closed when the
// test ends.
func newDaemon(tb testing.TB, set *backend.Set) *daemon.Daemon {
	tb.Helper()
	return newDaemonAt(tb, set, nil)
}

// newDaemonAt is newDaemon whose retention tells the time by clock.
func newDaemonAt(tb testing.TB, set *backend.Set, clock bs.Clock) *daemon.Daemon {
	tb.Helper()
	ctx := context.Background()
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: set.AgentsDir, Open: wiring.Opener(set.AgentsDir, ""), Retention: daemon.Retention(nil, clock)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(d.Close)
	if _, err := d.Config().Replace(ctx, pruneConfig()); err != nil {
		tb.Fatal(err)
	}
	return d
}

// daemonHandler is the API over d as `brainsurgeon serve` builds it: the
// daemon's installation opened by internal/wiring, and opts for the rest.
func daemonHandler(tb testing.TB, d *daemon.Daemon, opts api.Options) http.Handler {
	tb.Helper()
	set, err := wiring.OpenFor(context.Background(), d, "")
	if err != nil {
		tb.Fatal(err)
	}
	opts.Installation, opts.Backend, opts.Daemon = set.Installation, set, d
	h, err := api.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// retentionStats is what a test reads of a retention run's report.
type retentionStats struct {
	Cleaned int   `json:"cleaned"`
	Bytes   int64 `json:"bytes"`
	Errors  int   `json:"errors"`
}

// newTrash is the daemon's trash over the fixture's installation.
func newTrash(f *fixture) *trash.Trash {
	return trash.New(f.set.Store, f.set.AgentsDir, f.set.StateDir)
}

// trashItem is what a test reads of a trashed item.
type trashItem struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
}

// serve starts the API on loopback.
func serve(tb testing.TB, opts api.Options) *httptest.Server {
	tb.Helper()
	h, err := api.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// client makes requests to a test server and decodes JSON answers.
type client struct {
	tb  testing.TB
	srv *httptest.Server
	key string
}

func (c *client) do(method, path string, body string, hdr ...string) (int, []byte, http.Header) {
	c.tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, r)
	if err != nil {
		c.tb.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("X-API-Key", c.key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// json makes a request, checks its status and decodes the answer into v.
func (c *client) json(method, path, body string, want int, v any) {
	c.tb.Helper()
	code, b, _ := c.do(method, path, body)
	if code != want {
		c.tb.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			c.tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// rawRequest sends a request line exactly as given (no client-side
// cleaning or escaping) and returns the status and body.
func rawRequest(tb testing.TB, srv *httptest.Server, method, target string, hdr ...string) (int, string) {
	tb.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	req := method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: 0\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func newRestorer(f *fixture) *restore.Restorer {
	return restore.New(f.set.Store, f.set.Side, f.set.StateDir)
}

// newLoopback starts a handler on loopback for a benchmark or test.
func newLoopback(tb testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// syntheticThinking is a session with large thinking blocks.
func syntheticThinking() synth.Options {
	return synth.Options{Size: 60 << 10, Seed: 99, MinResult: 600, MaxResult: 1500, MinThinking: 2000, MaxThinking: 4000}
}
