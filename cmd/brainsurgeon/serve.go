package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
	"github.com/brainsurgeon/brainsurgeon/session"
)

const serveUsage = `Usage: brainsurgeon serve [--addr 127.0.0.1:8000] [--agents-dir DIR] [--demo]

Runs the BrainSurgeon daemon: scheduled extraction (auto_cron), retention
(retention_cron) and the doctor report in the log (doctor_schedule; it fixes
and collects nothing) over the agents dir, and the REST API and web UI on
--addr.
The runtime config is .brainsurgeon/config.json beside the agents dir (created
with the defaults, pruning off, when missing); logs go to
<openclaw root>/logs/brainsurgeon.log, and to stderr on a terminal.

--demo writes a sample agents dir (OpenClaw sessions with large tool results
and thinking) to a temp dir, enables pruning there, runs a first pass and
serves it; the temp dir is removed on exit.

Stop it with Ctrl-C (SIGINT) or SIGTERM: a write in progress finishes.

Environment:
  BRAINSURGEON_AGENTS_DIR, AGENTS_DIR  the agents dir (default
                            $OPENCLAW_STATE_DIR/agents, else ~/.openclaw/agents)
  BRAINSURGEON_READONLY     "true": write nothing at all, schedules included
  BRAINSURGEON_API_KEYS     comma-separated keys for the API's writes (none: open)
  BRAINSURGEON_API_KEY_FILE a file of more keys, one a line (default:
                            <openclaw root>/.brainsurgeon/api.key when it
                            exists, as "brainsurgeon openclaw install" writes)
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
}

// readServeEnv reads and checks the environment; a bad value is a usage
// error naming the variable.
func readServeEnv() (serveEnv, error) {
	e := serveEnv{AutoRefreshMS: 10000, Port: "8000"}
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

// maxServeKeyFile bounds the size of an API key file.
const maxServeKeyFile = 64 << 10

// readKeyFile returns the keys of the API key file: the file named by
// BRAINSURGEON_API_KEY_FILE (which must exist), else
// <openclaw root>/.brainsurgeon/api.key when it exists. Each non-empty
// line, trimmed, is a key. The path read is returned for the log ("" when
// none).
func readServeKeyFile(env serveEnv, agentsDir string) ([]string, string, error) {
	path, explicit := env.KeyFile, env.KeyFile != ""
	if !explicit {
		path = filepath.Join(filepath.Dir(filepath.Clean(agentsDir)), filepath.FromSlash(serveKeyFileName))
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("BRAINSURGEON_API_KEY_FILE: expected a readable file of API keys: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxServeKeyFile+1))
	if err != nil {
		return nil, "", fmt.Errorf("API key file %s: %w", path, err)
	}
	if len(data) > maxServeKeyFile {
		return nil, "", fmt.Errorf("API key file %s: expected at most %d bytes of keys, one a line, found more: %w", path, maxServeKeyFile, bs.ErrInvalid)
	}
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			keys = append(keys, line)
		}
	}
	if len(keys) == 0 {
		return nil, "", fmt.Errorf("API key file %s: expected at least one key, found an empty file: %w", path, bs.ErrInvalid)
	}
	return keys, path, nil
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

// serveHandler returns the REST API and web UI over d, with the
// security settings of the environment.
func serveHandler(ctx context.Context, d *daemon.Daemon, env serveEnv) (http.Handler, error) {
	return d.Handler(ctx, api.Options{APIKeys: env.APIKeys, CORSOrigins: env.CORSOrigins, ReadOnly: env.ReadOnly,
		AutoRefreshMS: env.AutoRefreshMS, Version: cli.Version(version)})
}

type serveCommand struct{ m *Main }

func (c *serveCommand) Run(ctx context.Context, args []string) error {
	env, err := readServeEnv()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("brainsurgeon serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:"+env.Port, "address to listen on (host:port)")
	agentsDir := fs.String("agents-dir", session.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
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
	// daemon logs it once the log is open) and the listen address. A
	// refused start leaves no log file, no state dir and no config.
	if err := backend.CheckAgentsDir(*agentsDir); err != nil {
		return err
	}
	if _, err := config.Load(ctx, *agentsDir, nil); err != nil {
		return err
	}
	fileKeys, keyFile, err := readServeKeyFile(env, *agentsDir)
	if err != nil {
		return err
	}
	env.APIKeys = append(env.APIKeys, fileKeys...)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	defer ln.Close() // a no-op once the server has closed it
	level, _ := logging.ParseLevel(env.LogLevel)
	lo := logging.Options{Level: level, File: filepath.Join(logging.Dir(*agentsDir), logging.FileName)}
	if env.ReadOnly {
		lo.File = "" // read-only writes nothing, logs included
	}
	if f, ok := c.m.Stderr.(*os.File); ok && logging.IsTerminal(f) || lo.File == "" {
		lo.Stderr = c.m.Stderr
	}
	log, closer, err := logging.New(lo)
	if err != nil {
		return err
	}
	defer closer.Close()

	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: *agentsDir, Open: wiring.Opener(*agentsDir), ReadOnly: env.ReadOnly, Logger: log, Retention: daemon.Retention(log, nil), LimitMemory: true})
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
	h, err := serveHandler(ctx, d, env)
	if err != nil {
		d.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(c.m.Stdout, "BrainSurgeon is serving %s on http://%s/\n", *agentsDir, ln.Addr())
	log.Info("serving", "addr", ln.Addr().String(), "agents_dir", *agentsDir, "read_only", env.ReadOnly, "api_keys", len(env.APIKeys), "api_key_file", keyFile)

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	// Shutdown: the server stops taking requests and finishes those in
	// flight, then the scheduler stops (a write in progress finishes).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	serr := srv.Shutdown(sctx)
	d.Close()
	log.Info("stopped")
	fmt.Fprintln(c.m.Stdout, "BrainSurgeon stopped")
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return serr
}
