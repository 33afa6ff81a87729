package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

const serveUsage = `Usage: brainsurgeon serve [--addr 127.0.0.1:8000] [--agents-dir DIR] [--demo]

Runs the BrainSurgeon daemon: scheduled extraction (auto_cron), retention
(retention_cron) and the doctor report in the log (doctor_schedule; it fixes
and collects nothing) over the agents dir, and the REST API and web UI on
--addr.
The runtime config is .brainsurgeon/config.json beside the agents dir (created
with the defaults, pruning off, when missing); logs go to
<openclaw root>/logs/brainsurgeon.log, and to stderr on a terminal.

When the agents dir does not exist yet but its parent (the OpenClaw root)
does (OpenClaw creates the agents dir at the first turn), serve says so and
waits for it: /api/health answers "status":
"waiting", every other /api/ path 503, and nothing is written (logs go to
stderr). Once the dir appears the daemon opens and serves it, without a
restart.

After its URL serve prints where its API key is (never the key). The key
file is watched: a new key (a rotation, a reinstall) is accepted and the old
one refused within about a second, without a restart; once the file has
existed, removing it keeps keys required.

--demo writes a sample agents dir (OpenClaw sessions with large tool results
and thinking) to a temp dir, enables pruning there, runs a first pass and
serves it; the temp dir is removed on exit.

Stop it with Ctrl-C (SIGINT) or SIGTERM: a write in progress finishes.

Environment:
  BRAINSURGEON_AGENTS_DIR, AGENTS_DIR  the agents dir (default
                            $OPENCLAW_STATE_DIR/agents, else ~/.openclaw/agents)
  BRAINSURGEON_READONLY     "true": write nothing at all, schedules included
  BRAINSURGEON_API_KEYS     comma-separated keys for the API's writes (none: open)
  BRAINSURGEON_API_KEY_FILE a file of more keys, one a line, which must exist
                            at start (default: <openclaw root>/.brainsurgeon/api.key,
                            as "brainsurgeon openclaw install" writes it,
                            required from when it exists, without a restart)
  BRAINSURGEON_CORS_ORIGINS comma-separated origins allowed by CORS
  AUTO_REFRESH_MS           the web UI's refresh period (default 10000)
  PORT                      the port when --addr is not given (default 8000)
  LOG_LEVEL                 trace, debug, info (default), warn or error

Examples:
  brainsurgeon serve --demo
  brainsurgeon serve --addr 127.0.0.1:9000 --agents-dir /srv/openclaw/agents

Flags:
`

// serveEnv is the environment of serve: security and paths come from it
// only, never from the runtime config.
type serveEnv struct {
	APIKeys []string
	// KeyFile is BRAINSURGEON_API_KEY_FILE ("" when not set).
	KeyFile       string
	CORSOrigins   []string
	ReadOnly      bool
	AutoRefreshMS int
	Port          string
	LogLevel      string
	// PiSessionsDir is the pi sessions dir served beside the agents dir
	// (config.PiSessionsDir: BRAINSURGEON_PI_SESSIONS_DIR, or pi's own
	// when it exists; "" none).
	PiSessionsDir string
}

// readServeEnv reads and checks the environment; a bad value is a usage
// error naming the variable.
func readServeEnv() (serveEnv, error) {
	e := serveEnv{AutoRefreshMS: 10000, Port: "8000"}
	pi, _, err := config.PiSessionsDir()
	if err != nil {
		return e, cli.Usagef("BRAINSURGEON_PI_SESSIONS_DIR: %v", err)
	}
	e.PiSessionsDir = pi
	e.APIKeys = splitList(os.Getenv("BRAINSURGEON_API_KEYS"))
	e.KeyFile = strings.TrimSpace(os.Getenv("BRAINSURGEON_API_KEY_FILE"))
	e.CORSOrigins = splitList(os.Getenv("BRAINSURGEON_CORS_ORIGINS"))
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv("BRAINSURGEON_READONLY"))); v {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		e.ReadOnly = true
	default:
		return e, cli.Usagef("BRAINSURGEON_READONLY=%q: expected true or false", v)
	}
	if v := strings.TrimSpace(os.Getenv("AUTO_REFRESH_MS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return e, cli.Usagef("AUTO_REFRESH_MS=%q: expected a number of milliseconds, 0 or more", v)
		}
		e.AutoRefreshMS = n
	}
	if v := strings.TrimSpace(os.Getenv("PORT")); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 65535 {
			return e, cli.Usagef("PORT=%q: expected a port number from 0 to 65535", v)
		}
		e.Port = v
	}
	e.LogLevel = os.Getenv("LOG_LEVEL")
	if _, err := logging.ParseLevel(e.LogLevel); err != nil {
		return e, cli.Usagef("LOG_LEVEL: %v", err)
	}
	return e, nil
}

// serveKeyFileName is the API key file's path below the openclaw root (the
// parent of the agents dir).
const serveKeyFileName = ".brainsurgeon/api.key"

// serveKeyFilePath returns the API key file serve uses: the file named by
// BRAINSURGEON_API_KEY_FILE (explicit), else
// <openclaw root>/.brainsurgeon/api.key, which need not exist yet.
func serveKeyFilePath(env serveEnv, agentsDir string) (path string, explicit bool) {
	if env.KeyFile != "" {
		return env.KeyFile, true
	}
	return filepath.Join(filepath.Dir(filepath.Clean(agentsDir)), filepath.FromSlash(serveKeyFileName)), false
}

// readServeKeyFile returns the keys of the API key file: the file named by
// BRAINSURGEON_API_KEY_FILE (which must exist), else
// <openclaw root>/.brainsurgeon/api.key when it exists. Each non-empty
// line, trimmed, is a key. The path read is returned for the log ("" when
// none).
//
// The default file may appear after start (brainsurgeon openclaw install
// writes it; the API requires it from then on), a named one may not: serve
// refuses to start without it. Nothing of BrainSurgeon writes a named file,
// so a missing one is a wrong path or a secret not mounted yet, and
// starting would serve an open API until it appears, unnoticed; a refused
// start says so at once, and a service manager starts serve again.
func readServeKeyFile(env serveEnv, agentsDir string) ([]string, string, error) {
	path, explicit := serveKeyFilePath(env, agentsDir)
	keys, err := api.ReadKeyFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return nil, "", nil
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		def, _ := serveKeyFilePath(serveEnv{}, agentsDir)
		return nil, "", fmt.Errorf("BRAINSURGEON_API_KEY_FILE=%s: expected a readable file of API keys, which serve requires when it is named, so that the API is never open by mistake (unset it to use %s, which serve requires from when it exists, without a restart): %w", path, def, err)
	}
	if err != nil {
		return nil, "", err
	}
	return keys, path, nil
}

// keyLine is the line serve prints about its API key, never a key: where
// to read it, or that the API is open to anyone reaching addr.
func keyLine(envKeys []string, keyFile string, fileExists bool, addr string) string {
	switch {
	case fileExists && len(envKeys) > 0:
		return fmt.Sprintf("API key: first line of %s (read it with: cat %s), or one of BRAINSURGEON_API_KEYS", keyFile, keyFile)
	case fileExists:
		return fmt.Sprintf("API key: first line of %s (read it with: cat %s)", keyFile, keyFile)
	case len(envKeys) > 0:
		return fmt.Sprintf("API keys: from BRAINSURGEON_API_KEYS (and the first line of %s once it exists)", keyFile)
	}
	return fmt.Sprintf("No API key: the API is open to anyone who can reach %s until %s exists (brainsurgeon openclaw install writes it)", addr, keyFile)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// serveHandler returns the REST API and web UI over d and the
// installation of its agents dir (opened by internal/wiring with the
// daemon's idle_seconds and logger), with the security settings of the
// environment and the key file kept in step.
func serveHandler(ctx context.Context, d *daemon.Daemon, env serveEnv, keyFile string) (http.Handler, error) {
	set, err := wiring.OpenFor(ctx, d, env.PiSessionsDir)
	if err != nil {
		return nil, err
	}
	return api.New(api.Options{Installation: set.Installation, Backend: set, Daemon: d,
		APIKeys: env.APIKeys, KeyFile: keyFile, CORSOrigins: env.CORSOrigins, ReadOnly: env.ReadOnly,
		AutoRefreshMS: env.AutoRefreshMS, Version: cli.Version(version), UI: ui.Handler()})
}

// agentsDirPoll is how often serve looks for the agents dir while it
// waits for it (tests shorten it).
var agentsDirPoll = time.Second

// swapHandler serves the handler stored last: the waiting answers until the
// daemon is open, then the API. Safe for concurrent use.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

type serveCommand struct{ m *Main }

func (c *serveCommand) Run(ctx context.Context, args []string) error {
	env, err := readServeEnv()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("brainsurgeon serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:"+env.Port, "address to listen on (host:port)")
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	demoMode := fs.Bool("demo", false, "serve a generated sample agents dir with pruning enabled")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, serveUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("serve takes no arguments, got %q", pos), Try: "brainsurgeon serve --help"}
	}
	if *demoMode {
		tmp, err := os.MkdirTemp("", "brainsurgeon-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if *agentsDir, _, err = demo.Write(tmp, demo.Options{GrowingUsage: true}); err != nil {
			return err
		}
		fmt.Fprintf(c.m.Stdout, "Demo agents dir: %s (removed on exit)\n", *agentsDir)
	}
	// Validate everything before writing anything, logs included: the
	// agents dir, the config (read with its upgrade logged nowhere; the
	// daemon logs it once the log is open), the key file and the listen
	// address. A refused start leaves no log file, no state dir and no
	// config. An agents dir that does not exist yet (OpenClaw creates it at
	// the first turn) is waited for.
	waiting := false
	if err := backend.CheckAgentsDir(*agentsDir); err != nil {
		if !errors.Is(err, bs.ErrNotFound) || *demoMode {
			return err
		}
		// Only an OpenClaw root that exists is waited for: a root that is
		// missing too is a wrong path (or OpenClaw was never set up), and
		// waiting would hide it.
		root := filepath.Dir(filepath.Clean(*agentsDir))
		if fi, serr := os.Stat(root); serr != nil || !fi.IsDir() {
			return fmt.Errorf("%w; its parent %s (the OpenClaw root) does not exist either, so there is nothing to wait for: set up OpenClaw first (openclaw onboard), or name the right agents dir", err, root)
		}
		waiting = true
	}
	if _, err := config.Load(ctx, *agentsDir, nil); err != nil {
		return err
	}
	fileKeys, _, err := readServeKeyFile(env, *agentsDir)
	if err != nil {
		return err
	}
	keyFile, _ := serveKeyFilePath(env, *agentsDir)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	defer ln.Close() // a no-op once the server has closed it
	level, _ := logging.ParseLevel(env.LogLevel)
	onTerminal := false
	if f, ok := c.m.Stderr.(*os.File); ok && logging.IsTerminal(f) {
		onTerminal = true
	}

	handler := &swapHandler{}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	var d *daemon.Daemon
	defer func() {
		// Shutdown: the server stops taking requests and finishes those
		// in flight, then the scheduler stops (a write in progress
		// finishes).
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if d != nil {
			d.Close()
		}
	}()
	keyInfo := keyLine(env.APIKeys, keyFile, fileKeys != nil, ln.Addr().String())
	if waiting {
		// Nothing is written before the agents dir exists: the log goes
		// to stderr only (its file lives in <openclaw root>/logs, and the
		// root may not exist yet either).
		wlog, _, err := logging.New(logging.Options{Level: level, Stderr: c.m.Stderr})
		if err != nil {
			return err
		}
		handler.set(api.Waiting(api.WaitingOptions{AgentsDir: *agentsDir, KeyFile: keyFile,
			AuthRequired: len(env.APIKeys) > 0 || fileKeys != nil, ReadOnly: env.ReadOnly, Version: cli.Version(version), UI: ui.Handler()}))
		fmt.Fprintf(c.m.Stdout, "BrainSurgeon is waiting for OpenClaw to create the agents dir %s (it does at the first turn); meanwhile http://%s/ answers /api/health\n", *agentsDir, ln.Addr())
		fmt.Fprintln(c.m.Stdout, keyInfo)
		wlog.Info("waiting for OpenClaw to create the agents dir (it does at the first turn)", "agents_dir", *agentsDir, "addr", ln.Addr().String(), "poll", agentsDirPoll.String())
		go func() { served <- srv.Serve(ln) }()
		if err := waitAgentsDir(ctx, *agentsDir, served); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(c.m.Stdout, "BrainSurgeon stopped")
				return nil
			}
			return err
		}
		logTo := filepath.Join(logging.Dir(*agentsDir), logging.FileName)
		if env.ReadOnly {
			logTo = "stderr"
		}
		wlog.Info("the agents dir exists: opening the daemon", "agents_dir", *agentsDir, "log", logTo)
	}

	lo := logging.Options{Level: level, File: filepath.Join(logging.Dir(*agentsDir), logging.FileName)}
	if env.ReadOnly {
		lo.File = "" // read-only writes nothing, logs included
	}
	if onTerminal || lo.File == "" {
		lo.Stderr = c.m.Stderr
	}
	log, closer, err := logging.New(lo)
	if err != nil {
		return err
	}
	defer closer.Close()

	d, err = daemon.Open(ctx, daemon.Options{AgentsDir: *agentsDir, Open: wiring.Opener(*agentsDir, env.PiSessionsDir), ReadOnly: env.ReadOnly, Logger: log, Retention: daemon.Retention(log, nil), LimitMemory: true})
	if err != nil {
		return err
	}
	if *demoMode && !env.ReadOnly {
		if _, err := d.Config().Set(ctx, []byte(`{"enabled": true}`)); err != nil {
			return err
		}
		r, err := d.RunPruneNow(ctx)
		if err != nil {
			return fmt.Errorf("demo: first pass: %w", err)
		}
		fmt.Fprintf(c.m.Stdout, "First pass: %d sessions, %d values extracted, %d bytes saved\n", r.Sessions, r.Values, r.BytesSaved)
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	// Requests see ctx: on SIGINT a manual run asked through the API stops
	// between sessions too.
	h, err := serveHandler(ctx, d, env, keyFile)
	if err != nil {
		return err
	}
	handler.set(h)
	if !waiting {
		go func() { served <- srv.Serve(ln) }()
	}
	fmt.Fprintf(c.m.Stdout, "BrainSurgeon is serving %s on http://%s/\n", *agentsDir, ln.Addr())
	if !waiting {
		fmt.Fprintln(c.m.Stdout, keyInfo)
	}
	log.Info("serving", "addr", ln.Addr().String(), "agents_dir", *agentsDir, "read_only", env.ReadOnly, "api_keys", len(env.APIKeys), "api_key_file", keyFile,
		"open", len(env.APIKeys) == 0 && fileKeys == nil)

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	serr := srv.Shutdown(sctx)
	d.Close()
	d = nil
	log.Info("stopped")
	fmt.Fprintln(c.m.Stdout, "BrainSurgeon stopped")
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return serr
}

// waitAgentsDir returns once the agents dir exists, checking every
// agentsDirPoll; an error when ctx is done, the server stopped, or the
// path became something other than a directory.
func waitAgentsDir(ctx context.Context, dir string, served <-chan error) error {
	t := time.NewTicker(agentsDirPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-served:
			return fmt.Errorf("serve while waiting for the agents dir: %w", err)
		case <-t.C:
		}
		switch err := backend.CheckAgentsDir(dir); {
		case err == nil:
			return nil
		case !errors.Is(err, bs.ErrNotFound):
			return err
		}
	}
}
