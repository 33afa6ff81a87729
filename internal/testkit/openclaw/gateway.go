package openclaw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ConfigOptions shape the openclaw.json that [WriteConfig] writes.
type ConfigOptions struct {
	// MockURL is the mock's base URL (http://127.0.0.1:<port>); the ollama provider points at it.
	MockURL string
	// ContextWindow of the mock model. Default 1,000,000: a seeded corpus session (100k+ tokens recorded) is then
	// not compacted on its first turn.
	ContextWindow int
	// LogFile is the host's file log (logging.file). Empty means OpenClaw's default under /tmp/openclaw;
	// [NewState] sets <dir>/openclaw.log.
	LogFile string
	// Heartbeat, when not empty, is agents.defaults.heartbeat.every ("0m" turns the host's own heartbeat turns
	// off; 2026.8+ runs them by default).
	Heartbeat string
}

// Config returns the openclaw.json of a test host: the ollama provider at the mock (its one model as the
// default), no update check, no pre-compaction memory flush.
func Config(o ConfigOptions) ([]byte, error) {
	if !strings.HasPrefix(o.MockURL, "http://127.0.0.1:") {
		return nil, fmt.Errorf("openclaw: mock URL %q is not on 127.0.0.1", o.MockURL)
	}
	cw := o.ContextWindow
	if cw == 0 {
		cw = 1_000_000
	}
	cfg := map[string]any{
		"models": map[string]any{"providers": map[string]any{"ollama": map[string]any{
			"baseUrl": o.MockURL, "apiKey": "ollama-local", "api": "ollama",
			"models": []any{map[string]any{"id": MockModel, "name": MockModel, "input": []string{"text"}, "contextWindow": cw}},
		}}},
		"update": map[string]any{"checkOnStart": false},
		"agents": map[string]any{"defaults": map[string]any{
			"model":      map[string]any{"primary": "ollama/" + MockModel},
			"compaction": map[string]any{"memoryFlush": map[string]any{"enabled": false}},
		}},
	}
	if o.Heartbeat != "" {
		cfg["agents"].(map[string]any)["defaults"].(map[string]any)["heartbeat"] = map[string]any{"every": o.Heartbeat}
	}
	if o.LogFile != "" {
		cfg["logging"] = map[string]any{"file": o.LogFile}
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// State is a private OpenClaw state dir (OPENCLAW_STATE_DIR) with its own HOME, config and agents dir.
type State struct {
	Dir string
}

// NewState creates the state dir layout under dir (home/, agents/main/sessions/, tmp/), mode 0700, and writes
// openclaw.json.
func NewState(dir string, o ConfigOptions) (*State, error) {
	s := &State{Dir: dir}
	for _, d := range []string{dir, s.Home(), s.SessionsDir("main"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if o.LogFile == "" {
		o.LogFile = s.LogFile()
	}
	cfg, err := Config(o)
	if err != nil {
		return nil, err
	}
	return s, os.WriteFile(s.ConfigPath(), cfg, 0o600)
}

// Home returns <dir>/home, the HOME of the host's processes.
func (s *State) Home() string { return filepath.Join(s.Dir, "home") }

// ConfigPath returns <dir>/openclaw.json.
func (s *State) ConfigPath() string { return filepath.Join(s.Dir, "openclaw.json") }

// LogFile returns <dir>/openclaw.log, the host's file log.
func (s *State) LogFile() string { return filepath.Join(s.Dir, "openclaw.log") }

// AgentsDir returns <dir>/agents.
func (s *State) AgentsDir() string { return filepath.Join(s.Dir, "agents") }

// SessionsDir returns <dir>/agents/<agent>/sessions.
func (s *State) SessionsDir(agent string) string {
	return filepath.Join(s.AgentsDir(), agent, "sessions")
}

// SessionsJSONPath returns the sessions.json of agent.
func (s *State) SessionsJSONPath(agent string) string {
	return filepath.Join(s.SessionsDir(agent), "sessions.json")
}

// Vars returns the host environment for this state dir (without a gateway port or token).
func (s *State) Vars(e Env, extra ...string) []string {
	return e.Vars(append([]string{"HOME=" + s.Home(), "OPENCLAW_STATE_DIR=" + s.Dir,
		"OPENCLAW_CONFIG_PATH=" + s.ConfigPath(), "TMPDIR=" + filepath.Join(s.Dir, "tmp")}, extra...)...)
}

// SessionEntry is the part of a sessions.json entry the tests read.
type SessionEntry struct {
	SessionID         string `json:"sessionId"`
	SessionFile       string `json:"sessionFile,omitempty"`
	Status            string `json:"status,omitempty"`
	UpdatedAt         int64  `json:"updatedAt,omitempty"`
	SessionStartedAt  int64  `json:"sessionStartedAt,omitempty"`
	LastInteractionAt int64  `json:"lastInteractionAt,omitempty"`
	StartedAt         int64  `json:"startedAt,omitempty"`
	EndedAt           int64  `json:"endedAt,omitempty"`
	AbortedLastRun    bool   `json:"abortedLastRun,omitempty"`
}

// Seed copies the transcript src into agent's sessions dir as <sessionID>.jsonl and adds a sessions.json entry
// for key. sessionStartedAt, lastInteractionAt and updatedAt are now, or the host's daily reset (which takes the
// header date as the session start) silently starts a new session on the first turn. It returns the copy's path.
func (s *State) Seed(agent, key, sessionID, src string) (string, error) {
	dir := s.SessionsDir(agent)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, sessionID+".jsonl")
	if err := copyFile(src, dst); err != nil {
		return "", err
	}
	if err := os.Chmod(dst, 0o600); err != nil {
		return "", err
	}
	store := map[string]json.RawMessage{}
	if b, err := os.ReadFile(s.SessionsJSONPath(agent)); err == nil {
		if err := json.Unmarshal(b, &store); err != nil {
			return "", fmt.Errorf("sessions.json: %w", err)
		}
	}
	now := time.Now().UnixMilli()
	e, err := json.Marshal(SessionEntry{SessionID: sessionID, SessionFile: dst, UpdatedAt: now,
		SessionStartedAt: now, LastInteractionAt: now})
	if err != nil {
		return "", err
	}
	store[key] = e
	b, err := json.MarshalIndent(store, "", "  ")
	if err != nil {
		return "", err
	}
	return dst, os.WriteFile(s.SessionsJSONPath(agent), b, 0o600)
}

// Sessions reads agent's sessions.json.
func (s *State) Sessions(agent string) (map[string]SessionEntry, error) {
	b, err := os.ReadFile(s.SessionsJSONPath(agent))
	if err != nil {
		return nil, err
	}
	var m map[string]SessionEntry
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", s.SessionsJSONPath(agent), err)
	}
	return m, nil
}

// CLI runs `openclaw ARGS...` of in on this state dir with no gateway (a cold command such as `plugins install`)
// and waits for it within ctx. A non-zero exit is an error (a *Result).
func (s *State) CLI(ctx context.Context, e Env, in Install, args ...string) (*Result, error) {
	return e.run(ctx, s.Dir, s.Vars(e), in.Node, append([]string{in.Entry()}, args...)...)
}

// Gateway is a running `openclaw gateway run --bind loopback` on a State.
type Gateway struct {
	Install Install
	State   *State
	Env     Env
	Port    int
	Token   string
	Log     string // its stdout and stderr
	proc    *Proc

	clientMu sync.Mutex
	client   *Client // see [Gateway.Client]
}

// StartGateway starts a gateway of in on st, on a free loopback port with token auth, and waits (within ctx)
// until `gateway call health` answers. On error everything it started is stopped.
func StartGateway(ctx context.Context, e Env, in Install, st *State) (*Gateway, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	g := &Gateway{Install: in, State: st, Env: e, Port: port, Token: "bs-e2e-token",
		Log: filepath.Join(st.Dir, "gateway.log")}
	env := st.Vars(e, "OPENCLAW_GATEWAY_PORT="+strconv.Itoa(port))
	g.proc, err = e.start("openclaw gateway", st.Dir, g.Log, env, in.Node, in.Entry(), "gateway", "run",
		"--allow-unconfigured", "--bind", "loopback", "--port", strconv.Itoa(port), "--auth", "token", "--token", g.Token)
	if err != nil {
		return nil, err
	}
	if err := g.waitReady(ctx); err != nil {
		g.Stop()
		return nil, fmt.Errorf("%w\ngateway log: %s", err, g.LogTail(3000))
	}
	return g, nil
}

func (g *Gateway) waitReady(ctx context.Context) error {
	if err := waitTCP(ctx, g.proc, g.Port); err != nil {
		return err
	}
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := g.CLI(cctx, "gateway", "call", "health", "--json")
		cancel()
		if err == nil {
			return nil
		}
		last = err
		if done, werr := g.proc.Exited(); done {
			return fmt.Errorf("gateway exited: %v", werr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway not healthy: %w (last: %v)", ctx.Err(), last)
		case <-time.After(time.Second):
		}
	}
}

// LogTail returns the last n bytes of the gateway's output and of the host's file log.
func (g *Gateway) LogTail(n int) string {
	out, _ := os.ReadFile(g.Log)
	file, _ := os.ReadFile(g.State.LogFile())
	return "--- " + g.Log + "\n" + tail(out, n) + "\n--- " + g.State.LogFile() + "\n" + tail(file, n)
}

// Stop stops the gateway's [Client], if started, and the gateway (process group; bounded).
func (g *Gateway) Stop() error {
	if g == nil {
		return nil
	}
	g.clientMu.Lock()
	g.client.Stop()
	g.client = nil
	g.clientMu.Unlock()
	return g.proc.Stop()
}

// PID returns the gateway's pid.
func (g *Gateway) PID() int { return g.proc.PID() }

// CLI runs `openclaw ARGS...` against this gateway (same state dir, port and token) and waits for it within ctx.
// A non-zero exit is an error (a *Result).
func (g *Gateway) CLI(ctx context.Context, args ...string) (*Result, error) {
	env := g.State.Vars(g.Env, "OPENCLAW_GATEWAY_PORT="+strconv.Itoa(g.Port), "OPENCLAW_GATEWAY_TOKEN="+g.Token)
	return g.Env.run(ctx, g.State.Dir, env, g.Install.Node, append([]string{g.Install.Entry()}, args...)...)
}

// Turn is one agent turn.
type Turn struct {
	Key     string // session key, e.g. "agent:main:main"
	Message string
	// Timeout, when > 0, is passed as --timeout (seconds): the run ends "timeout" when the model does not answer
	// in time.
	Timeout int
}

// Agent runs `openclaw agent --session-key K --model ollama/<mock model> --message M --json` through the gateway
// and waits for it within ctx.
func (g *Gateway) Agent(ctx context.Context, t Turn) (*Result, error) {
	args := []string{"agent", "--session-key", t.Key, "--model", "ollama/" + MockModel, "--message", t.Message, "--json"}
	if t.Timeout > 0 {
		args = append(args, "--timeout", strconv.Itoa(t.Timeout))
	}
	return g.CLI(ctx, args...)
}

// Running is an agent turn started with StartAgent.
type Running struct {
	done chan struct{}
	res  *Result
	err  error
}

// StartAgent starts Agent in the background; Wait returns its outcome.
func (g *Gateway) StartAgent(ctx context.Context, t Turn) *Running {
	r := &Running{done: make(chan struct{})}
	go func() {
		r.res, r.err = g.Agent(ctx, t)
		close(r.done)
	}()
	return r
}

// Wait waits for the turn (or ctx) and returns its outcome.
func (r *Running) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SessionRow is one row of `gateway call sessions.list`.
type SessionRow struct {
	Key          string          `json:"key"`
	SessionID    string          `json:"sessionId"`
	Status       string          `json:"status"`
	HasActiveRun bool            `json:"hasActiveRun"`
	ActiveRunIDs []string        `json:"activeRunIds"`
	Raw          json.RawMessage `json:"-"`
}

// SessionsList calls the gateway's sessions.list RPC (limit 200), the authoritative run-in-flight signal, through
// the gateway's [Client] (what `openclaw gateway call sessions.list` sends, without a CLI start-up per call).
func (g *Gateway) SessionsList(ctx context.Context) ([]SessionRow, error) {
	raw, err := g.Call(ctx, "sessions.list", map[string]any{"limit": 200})
	if err != nil {
		return nil, err
	}
	var out struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("sessions.list: %w: %s", err, tail(raw, 500))
	}
	rows := make([]SessionRow, 0, len(out.Sessions))
	for _, raw := range out.Sessions {
		var row SessionRow
		if err := json.Unmarshal(raw, &row); err != nil {
			return nil, fmt.Errorf("sessions.list row: %w", err)
		}
		row.Raw = raw
		rows = append(rows, row)
	}
	return rows, nil
}

// jsonPart returns b from its first '{' (CLI banners or warnings may precede the JSON).
func jsonPart(b []byte) []byte {
	for i, c := range b {
		if c == '{' {
			return b[i:]
		}
	}
	return b
}

// ErrNoJSON says a command printed no JSON object.
var ErrNoJSON = errors.New("no JSON object in the output")

// DecodeJSON decodes the JSON object a command printed on stdout (anything before its first '{' is skipped).
func (r *Result) DecodeJSON(v any) error {
	p := jsonPart(r.Stdout)
	if len(p) == 0 || p[0] != '{' {
		return ErrNoJSON
	}
	return json.Unmarshal(p, v)
}
