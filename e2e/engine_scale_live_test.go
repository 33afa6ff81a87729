//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	brainsurgeon "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
)

// Figures of TestEngineScaleLive.
const (
	// scaleBytes is the least size of the grown session: the corpus's longest sessions are about 3 MB, and the
	// engine exists for the long ones users report (tens to a hundred MB).
	scaleBytes = 30 << 20
	// scaleTurns is how many turns each arm serves after the import.
	scaleTurns = 10
)

// growSession writes to dst the OpenClaw session src grown to at least size bytes: its header, then its message
// entries repeated on one branch with fresh ids (8 hex digits), parent ids chaining each to the one before, entry
// and message timestamps two seconds apart from the session's start, and tool-call ids suffixed per repetition
// ("_r<n>" from the second on) so that every call keeps its own result. Other entries (compactions, model and
// thinking-level changes, custom entries) are left out: the whole grown session is the model's context. It
// returns the bytes and the messages written.
func growSession(t *testing.T, src, dst string, size int) (written, messages int) {
	t.Helper()
	raw := readFile(t, src)
	lines := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(lines) < 2 {
		t.Fatalf("grow %s: expected a header and entries, found %d lines", src, len(lines))
	}
	var head struct {
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal(lines[0], &head); err != nil {
		t.Fatalf("grow %s: header: %v", src, err)
	}
	start, err := time.Parse(time.RFC3339Nano, head.Timestamp)
	if err != nil {
		t.Fatalf("grow %s: header timestamp %q: %v", src, head.Timestamp, err)
	}
	var msgs [][]byte
	for _, l := range lines[1:] {
		var e struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(l, &e) == nil && e.Type == "message" {
			msgs = append(msgs, l)
		}
	}
	if len(msgs) == 0 {
		t.Fatalf("grow %s: no message entries", src)
	}
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	put := func(b []byte) {
		_, _ = w.Write(b)
		_ = w.WriteByte('\n')
		written += len(b) + 1
	}
	put(lines[0])
	parent := ""
	n := 0
	for rep := 0; written < size; rep++ {
		suffix := ""
		if rep > 0 {
			suffix = fmt.Sprintf("_r%d", rep)
		}
		for _, l := range msgs {
			var e map[string]any
			dec := json.NewDecoder(bytes.NewReader(l))
			dec.UseNumber()
			if err := dec.Decode(&e); err != nil {
				t.Fatalf("grow %s: %v", src, err)
			}
			n++
			id := fmt.Sprintf("%08x", 0x5ca1e000+n)
			at := start.Add(time.Duration(n) * 2 * time.Second)
			e["id"] = id
			if parent == "" {
				e["parentId"] = nil
			} else {
				e["parentId"] = parent
			}
			parent = id
			e["timestamp"] = brainsurgeon.FormatTimestamp(at)
			m, _ := e["message"].(map[string]any)
			if m == nil {
				t.Fatalf("grow %s: a message entry without a message object", src)
			}
			m["timestamp"] = at.UnixMilli()
			if id, ok := m["toolCallId"].(string); ok {
				m["toolCallId"] = id + suffix
			}
			if blocks, ok := m["content"].([]any); ok {
				for _, b := range blocks {
					if bm, ok := b.(map[string]any); ok && bm["type"] == "toolCall" {
						if id, ok := bm["id"].(string); ok {
							bm["id"] = id + suffix
						}
					}
				}
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(e); err != nil {
				t.Fatalf("grow %s: %v", src, err)
			}
			put(bytes.TrimRight(out.Bytes(), "\n"))
			messages++
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return written, messages
}

// scaleTurn is one turn of one arm of TestEngineScaleLive.
type scaleTurn struct {
	// Start is when the turn's request went to the gateway; ModelAt when the model got the turn's first request.
	Start, ModelAt time.Time
	// ToModel is the time from the turn's request to the gateway until the model got the turn's first request.
	ToModel time.Duration
	// Bytes is the size of the JSON of that request's messages.
	Bytes int
	// Took is the whole turn.
	Took time.Duration
	// The engine arm's views made before the model got the turn's first request (the engine's state): how many,
	// the engine's time for them (Turn.ElapsedMS, the state's save left out), the host's messages of the first,
	// how many of the session's oldest messages the host left out, whether it opened with its bootstrap
	// message, and whether the last had a summary.
	Calls      int
	EngineMS   float64
	HostMsgs   int
	Trimmed    int
	Bootstrap  bool
	Summarized bool
	// Sent are, for each of those calls, the skeletons the request carried and the host's messages it stood for
	// ("sent/messages", from the daemon's debug log): a call sent with a base carries only the messages after it.
	Sent []string
}

// servedRE reads the host's messages and the skeletons sent of a daemon's "view served" record.
var servedRE = regexp.MustCompile(` messages=(\d+) sent=(\d+) `)

// scaleArm is one arm's figures.
type scaleArm struct {
	Mode                  string
	Import, Setup         time.Duration
	Turns                 []scaleTurn
	DaemonP50, DaemonP99  float64 // the daemon's assemble latency (engine arm)
	Views, Passthroughs   int
	ImportedRows, RowSize int
}

// TestEngineScaleLive is the live check of issue 33 on a long session: the corpus session of TestLiveSQLite grown
// to at least 30 MB (growSession), moved into OpenClaw 2026.9.6's SQLite store by its own importer, then 10 turns on
// a gateway with the host's own (legacy) context engine, and 10 on another with BrainSurgeon's (`brainsurgeon
// serve` and the plugin installed with `openclaw install --engine --link`), each driven through the gateway's
// long-lived client (started before the first turn, so no turn pays a CLI's or the client's start-up). It reports,
// per turn and as medians, the time from the turn's request to the gateway until the model gets the turn's first
// request, for both arms, the engine's own time for the views made before it, and the daemon's assemble latency,
// views and passthroughs (with the daemon's reason). Every turn of both arms must succeed, and the engine must
// serve every call a view: 2026.9.6 loads only the newest part of this session, opened by its bootstrap message,
// which the view's summary covers (a passthrough here is the defect of issue 33's closing note). The times are
// reported, not judged (performance targets live in benchmarks and notes).
func TestEngineScaleLive(t *testing.T) {
	in := openclaw.Require(t, openclaw.V9)
	work := t.TempDir()
	grown := filepath.Join(work, liveSQLiteSeedFile)
	t0 := time.Now()
	size, msgs := growSession(t, corpusFile(t, liveSQLiteSeedFile), grown, scaleBytes)
	t.Logf("grown session: %d bytes, %d messages, in %s", size, msgs, time.Since(t0).Round(time.Millisecond))
	legacy := runScaleArm(t, in, work, grown, false)
	eng := runScaleArm(t, in, work, grown, true)

	var b strings.Builder
	fmt.Fprintf(&b, "TestEngineScaleLive: a session of %d bytes (%d messages), %d turns per arm\n", size, msgs, scaleTurns)
	for _, a := range []*scaleArm{legacy, eng} {
		fmt.Fprintf(&b, "  %s: import %s, setup %s, %d rows (%d bytes)\n", a.Mode, a.Import.Round(100*time.Millisecond),
			a.Setup.Round(100*time.Millisecond), a.ImportedRows, a.RowSize)
	}
	fmt.Fprintf(&b, "  %-5s %14s %14s %12s %12s %10s %10s %6s %10s %9s %8s %5s %8s  %s\n", "turn", "legacy→model", "engine→model",
		"legacy bytes", "engine bytes", "legacy", "engine", "views", "engine ms", "host msgs", "trimmed", "boot", "summary", "sent")
	for i := range scaleTurns {
		l, e := legacy.Turns[i], eng.Turns[i]
		fmt.Fprintf(&b, "  %-5d %14s %14s %12d %12d %10s %10s %6d %10.1f %9d %8d %5v %8v  %s\n", i+1, l.ToModel.Round(time.Millisecond),
			e.ToModel.Round(time.Millisecond), l.Bytes, e.Bytes, l.Took.Round(10*time.Millisecond), e.Took.Round(10*time.Millisecond),
			e.Calls, e.EngineMS, e.HostMsgs, e.Trimmed, e.Bootstrap, e.Summarized, strings.Join(e.Sent, ", "))
	}
	ml, me := medianDuration(legacy.Turns), medianDuration(eng.Turns)
	ml2, me2 := medianDuration(legacy.Turns[1:]), medianDuration(eng.Turns[1:])
	engMS := make([]float64, 0, scaleTurns)
	for _, e := range eng.Turns {
		engMS = append(engMS, e.EngineMS)
	}
	fmt.Fprintf(&b, "  median time to the model: legacy %s, engine %s, engine − legacy %s (turns 2–%d: legacy %s, engine %s, %s)\n",
		ml.Round(time.Millisecond), me.Round(time.Millisecond), (me - ml).Round(time.Millisecond), scaleTurns,
		ml2.Round(time.Millisecond), me2.Round(time.Millisecond), (me2 - ml2).Round(time.Millisecond))
	fmt.Fprintf(&b, "  engine's own time before the model call, median per turn: %.1f ms (the rest of the difference is the plugin, the wire and the host)\n",
		medianFloat(engMS))
	fmt.Fprintf(&b, "  daemon assemble latency: p50 %.1f ms, p99 %.1f ms; views %d, passthroughs %d\n", eng.DaemonP50, eng.DaemonP99, eng.Views, eng.Passthroughs)
	t.Log(b.String())
	// 2026.9.6 hands the engine the newest part of this session, opened by its bootstrap message: the engine must
	// serve it a view on every call (issue 33's closing note, "Found").
	if eng.Views == 0 || eng.Passthroughs > 0 {
		t.Errorf("the engine served %d views and %d passthroughs over %d turns; want a view on every call (the daemon's reasons are logged above)",
			eng.Views, eng.Passthroughs, scaleTurns)
	}
}

// medianFloat is the median of xs (0 for none).
func medianFloat(xs []float64) float64 {
	d := slices.Clone(xs)
	slices.Sort(d)
	if len(d) == 0 {
		return 0
	}
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

// medianDuration is the median of the turns' ToModel.
func medianDuration(turns []scaleTurn) time.Duration {
	d := make([]time.Duration, len(turns))
	for i, x := range turns {
		d[i] = x.ToModel
	}
	slices.Sort(d)
	if len(d) == 0 {
		return 0
	}
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

// runScaleArm imports the grown session into a fresh 2026.9.6 gateway (with BrainSurgeon as its context engine
// when withEngine) and serves scaleTurns plain turns.
func runScaleArm(t *testing.T, in openclaw.Install, work, grown string, withEngine bool) *scaleArm {
	t.Helper()
	arm := &scaleArm{Mode: "legacy"}
	if withEngine {
		arm.Mode = "engine"
	}
	t0 := time.Now()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	var d *serveProc
	seed := seedSQLite(t, pluginKey, liveSQLiteSeedID, grown)
	var st *openclaw.State
	h := openclaw.NewHostWithModel(t, openclaw.V9, model.URL(), func(s *openclaw.State) error {
		st = s
		start := time.Now()
		if err := seed(s); err != nil {
			return err
		}
		arm.Import = time.Since(start)
		scaleHostConfig(t, s)
		if !withEngine {
			return nil
		}
		// At debug level the daemon logs each view served with the skeletons the request carried.
		env := s.Vars(openclaw.NewEnv(in.Node), "BRAINSURGEON_AGENTS_DIR="+s.AgentsDir(), "LOG_LEVEL=debug")
		writeConfig(t, s.AgentsDir(), map[string]any{"enabled": false})
		d = startServe(t, env)
		dir := filepath.Join(work, arm.Mode)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		wrapper := openclawWrapper(t, dir, in)
		out, err := runEnv(env, bsBin, "openclaw", "install", "--engine", "--link", "--yes", "--openclaw", wrapper, "--daemon-url", d.url)
		if err != nil {
			return fmt.Errorf("install --engine: %w\n%s", err, out)
		}
		return nil
	})
	defer h.Close(t)
	arm.Setup = time.Since(t0)
	rows := sessionRows(t, storePath(st), liveSQLiteSeedID)
	arm.ImportedRows, arm.RowSize = len(rows), rowBytes(rows)
	// The gateway's client is started before the first turn: no turn pays its start-up.
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	_, err = h.Gateway.Client(ctx)
	cancel()
	if err != nil {
		t.Fatalf("the gateway client: %v", err)
	}
	for i := range scaleTurns {
		before := len(model.Requests())
		msg := fmt.Sprintf("Turn %d: where are we?", i+1)
		ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
		start := time.Now()
		_, err := h.Gateway.AgentCall(ctx, openclaw.Turn{Key: pluginKey, Message: msg})
		took := time.Since(start)
		cancel()
		if err != nil {
			t.Fatalf("%s turn %d: %v", arm.Mode, i+1, err)
		}
		got := model.Requests()[before:]
		if len(got) == 0 {
			t.Fatalf("%s turn %d made no model request", arm.Mode, i+1)
		}
		turn := scaleTurn{Start: start, ModelAt: got[0].At, Took: took, Bytes: messagesBytes(t, got[0].Body)}
		turn.ToModel = got[0].At.Sub(start)
		arm.Turns = append(arm.Turns, turn)
		t.Logf("%s turn %d: to the model %s, %d bytes of messages, turn %s", arm.Mode, i+1, turn.ToModel.Round(time.Millisecond),
			turn.Bytes, took.Round(10*time.Millisecond))
	}
	if d != nil {
		// The engine's views, from its state: each turn's are those made between its request and the model's.
		if es, ok := engineState(t, h, liveSQLiteSeedID); ok {
			for i := range arm.Turns {
				tu := &arm.Turns[i]
				for _, v := range es.Turns {
					if v.At.Before(tu.Start) || v.At.After(tu.ModelAt) {
						continue
					}
					if tu.Calls == 0 {
						tu.HostMsgs, tu.Trimmed, tu.Bootstrap = v.Messages, v.HostTrimmed, v.Bootstrap
					}
					tu.Calls++
					tu.EngineMS += v.ElapsedMS
					tu.Summarized = v.SummaryID != ""
				}
			}
		}
		for _, l := range daemonLog(t, filepath.Join(logging.Dir(st.AgentsDir()), logging.FileName), time.Time{}) {
			if !strings.Contains(l, "view served") {
				continue
			}
			m, n := logTimeRE.FindStringSubmatch(l), servedRE.FindStringSubmatch(l)
			if m == nil || n == nil {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				continue
			}
			for i := range arm.Turns {
				if tu := &arm.Turns[i]; !at.Before(tu.Start) && !at.After(tu.ModelAt) {
					tu.Sent = append(tu.Sent, n[2]+"/"+n[1])
				}
			}
		}
		arm.DaemonP50, arm.DaemonP99, arm.Views, arm.Passthroughs = engineHealth(t, d.url)
		if arm.Passthroughs > 0 {
			// Why the host's messages passed through, as the daemon logged it.
			shown := 0
			for _, l := range daemonLog(t, filepath.Join(logging.Dir(st.AgentsDir()), logging.FileName), time.Time{}) {
				if strings.Contains(l, "pass through") && shown < 3 {
					t.Logf("daemon: %.600s", l)
					shown++
				}
			}
		}
	}
	return arm
}

// scaleHostConfig sets the host's compaction to its default mode: its "safeguard" mode audits a summary against
// sections the test model's summary does not have, and then fails the turn (see engineConfigure).
func scaleHostConfig(t *testing.T, st *openclaw.State) {
	t.Helper()
	raw := readFile(t, st.ConfigPath())
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	obj(obj(obj(cfg, "agents"), "defaults"), "compaction")["mode"] = "default"
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.ConfigPath(), out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// engineHealth reads the engine's figures from GET /api/health.
func engineHealth(t *testing.T, url string) (p50, p99 float64, views, passthroughs int) {
	t.Helper()
	resp, err := http.Get(url + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var h struct {
		Engine struct {
			Views        int `json:"views"`
			Passthroughs int `json:"passthroughs"`
			Latency      struct {
				P50 float64 `json:"p50"`
				P99 float64 `json:"p99"`
			} `json:"latency_ms"`
		} `json:"engine"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("/api/health: %v\n%s", err, raw)
	}
	return h.Engine.Latency.P50, h.Engine.Latency.P99, h.Engine.Views, h.Engine.Passthroughs
}
