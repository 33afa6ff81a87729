package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
)

// syncBuffer is a bytes.Buffer safe for the handlers' concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records returns the JSON log records whose msg is msg.
func (s *syncBuffer) records(tb testing.TB, msg string) []map[string]any {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(s.b.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			tb.Fatalf("log line %s: %v", line, err)
		}
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// keysOf returns the member names of a JSON object, sorted.
func keysOf(tb testing.TB, raw json.RawMessage) []string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("%s: %v", raw, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestEngineViewsObservable serves views with the real engine and checks
// what shows of them: each view served logged at debug, the calls counted
// with their latency in GET /api/health and GET /api/plugin/v1/health
// ("engine"), and the session detail's last views.
func TestEngineViewsObservable(t *testing.T) {
	f := newPlugFixture(t)
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	eng := &engine.Engine{Store: f.set.Store, StateDir: t.TempDir(), Logger: log}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Engine: eng, Logger: log})}

	var empty struct {
		Engine json.RawMessage `json:"engine"`
	}
	c.json("GET", "/api/health", "", 200, &empty)
	if got := string(empty.Engine); got != `{"views":0,"passthroughs":0,"failures":0,"last_view_at":null,"latency_ms":{"count":0,"p50":0,"p99":0,"max":0}}` {
		t.Errorf("health before any call: engine %s", got)
	}

	const views = 3
	for range views {
		var ans api.AssembleResponse
		c.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, &ans)
		if ans.Passthrough != "" {
			t.Fatalf("assemble passed through: %s", ans.Passthrough)
		}
		if ans.HostChars != 40+90+9000 || ans.Chars <= 0 || ans.ElapsedMS <= 0 {
			t.Errorf("assemble answer: host_chars %d, view_chars %d, elapsed_ms %v", ans.HostChars, ans.Chars, ans.ElapsedMS)
		}
	}
	c.json("POST", "/api/plugin/v1/assemble", assembleBody("cccccccc-0000-4000-8000-000000000003", hostMessages), 200, nil)
	c.do("POST", "/api/plugin/v1/assemble", `{"session_id":"`+plugSessA+`","token_budget":-1,"messages":[]}`)

	for _, path := range []string{"/api/health", "/api/plugin/v1/health"} {
		var ans struct {
			Engine json.RawMessage `json:"engine"`
		}
		c.json("GET", path, "", 200, &ans)
		if got, want := keysOf(t, ans.Engine), []string{"failures", "last_view_at", "latency_ms", "passthroughs", "views"}; !slices.Equal(got, want) {
			t.Errorf("%s: engine members %v, want %v", path, got, want)
		}
		var st engine.Stats
		if err := json.Unmarshal(ans.Engine, &st); err != nil {
			t.Fatal(err)
		}
		l := st.LatencyMS
		if st.Views != views || st.Passthroughs != 1 || st.Failures != 1 || st.LastViewAt == nil ||
			l.Count != views+2 || l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
			t.Errorf("%s: engine %s; want %d views, 1 pass-through, 1 failure, %d calls measured", path, ans.Engine, views, views+2)
		}
	}

	// What brainsurgeon openclaw status and doctor read of it.
	var dh openclawinstall.DaemonHealth
	c.json("GET", "/api/health", "", 200, &dh)
	if dh.Engine == nil || dh.Engine.Views != views || dh.Engine.LatencyMS.Count != views+2 ||
		!strings.Contains(dh.Engine.String(), "3 views, 1 pass-through, 1 failure since the daemon started; assemble p50 ") {
		t.Errorf("the health answer as openclaw status reads it: %+v", dh.Engine)
	}

	// The session detail's last views, newest first, with their time.
	var d struct {
		Engine struct {
			LastViews []json.RawMessage `json:"last_views"`
		} `json:"engine"`
	}
	c.json("GET", "/api/sessions/main/"+plugSessA, "", 200, &d)
	if len(d.Engine.LastViews) != views {
		t.Fatalf("detail: %d last views, want %d", len(d.Engine.LastViews), views)
	}
	for i, raw := range d.Engine.LastViews {
		var tv engine.Turn
		if err := json.Unmarshal(raw, &tv); err != nil {
			t.Fatal(err)
		}
		if tv.N != views-i || tv.ElapsedMS <= 0 || tv.Messages != 3 || tv.HostChars != 40+90+9000 || tv.At.IsZero() {
			t.Errorf("last view %d: %s; want turn %d with its time, messages and characters", i, raw, views-i)
		}
		for _, k := range []string{"turn", "at", "messages", "view_chars", "host_chars", "prefix_changed", "elapsed_ms"} {
			if !slices.Contains(keysOf(t, raw), k) {
				t.Errorf("last view %d: %s lacks %q", i, raw, k)
			}
		}
	}

	// Each view served is logged at debug, the pass-through too.
	recs := logs.records(t, "context engine: view served")
	if len(recs) != views+1 {
		t.Fatalf("%d view records, want %d:\n%s", len(recs), views+1, logs.b.String())
	}
	for i, r := range recs {
		for _, k := range []string{"session", "messages", "layers", "host_chars", "view_chars", "host_tokens", "view_tokens",
			"prefix_changed", "summary_id", "elapsed_ms", "engine_ms", "passthrough"} {
			if _, ok := r[k]; !ok {
				t.Errorf("record %d lacks %q: %v", i, k, r)
			}
		}
		if r["level"] != "DEBUG" || r["host_tokens"] != float64((int(r["host_chars"].(float64))+3)/4) ||
			r["view_tokens"] != float64((int(r["view_chars"].(float64))+3)/4) || r["messages"] != float64(3) {
			t.Errorf("record %d: %v", i, r)
		}
		pass := i == views
		if (r["passthrough"] != "") != pass || (!pass && (r["session"] != "main/"+plugSessA || r["elapsed_ms"].(float64) <= 0)) {
			t.Errorf("record %d: session %v, passthrough %q, elapsed %v", i, r["session"], r["passthrough"], r["elapsed_ms"])
		}
		if pass && !strings.Contains(r["session"].(string), "cccccccc") {
			t.Errorf("the pass-through's record names session %v", r["session"])
		}
	}
}
