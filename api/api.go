// Package api is BrainSurgeon's REST API as an http.Handler that another Go
// program can mount. It reaches sessions and extracted
// values only through the library: the root interfaces of an opened
// installation (brainsurgeon.Installation), a restore.Restorer and the
// Backend's resolver (Backend is its one interface: the part of an
// installation that varies with the backends). The daemon's config
// service, jobs, Restorer and context engine are reached through a
// *daemon.Daemon, the trash as a *trash.Trash; when one is not given, its
// endpoints answer 501 with the reason.
//
// Every answer is JSON with snake_case names, like the CLI's --json; an
// error is {"error": "…"} with its status:
//
//   - 400: a bad path parameter, query parameter or body (the message
//     names the parameter or config field); config validation errors also
//     list every field under "fields";
//   - 401: X-API-Key missing while keys are set; 403: wrong key, or a
//     write in read-only mode, or a CORS preflight from an origin not
//     listed, or a plugin request (/api/plugin/v1/…) carrying an Origin
//     that is not listed;
//   - 404: no such session, entry, extracted value or endpoint;
//   - 405: a known path with another method (Allow lists the methods);
//   - 409: the session is busy or changed underneath us (try later), a
//     name is ambiguous, pruning is disabled (prune.ErrDisabled), or a
//     tool result stored at the source under a key already holding other
//     content, or an assemble request whose "base" names messages the
//     engine does not hold (engine.ErrNeedFull; the answer then carries
//     "need_full": true and the plugin sends all its messages);
//   - 413: request body larger than Options.MaxBodyBytes;
//   - 415: a plugin request whose Content-Type is not application/json;
//   - 422: the operation is not supported by the session's backend
//     (errors wrapping brainsurgeon.ErrUnsupported, such as trash or a
//     compaction entry on the SQLite store, where BrainSurgeon never
//     inserts or deletes rows): the request is well formed but
//     this backend cannot process it, which is why 422 and not 409 (kept
//     for conditions that pass);
//   - 501: the endpoint needs a Daemon, Trash or Engine that was not
//     given;
//   - 503: a request cancelled, a tool result to store at the source
//     while MaxSourceRequests others are being stored, or a remote side
//     store that cannot be reached now (errors wrapping
//     brainsurgeon.ErrUnavailable: the values are kept there; try later).
//
// Routes (the first BrainSurgeon's paths kept where it had them):
//
//	GET    /api/health
//	GET    /api/auth-info, /auth-info           (public)
//	GET    /api/config                          (public: it holds no security setting)
//	POST   /api/config
//	GET    /api/config/env                      (public)
//	GET    /api/agents
//	GET    /api/sessions?agent=&offset=&limit=
//	GET    /api/disk
//	GET    /api/doctor?agent=                   (read-only: diagnoses and leftovers, as `brainsurgeon doctor --json`)
//	GET    /api/agents/{agent}/sessions
//	GET    /api/sessions/{agent}/{id}?offset=&limit=&backend=
//	DELETE /api/sessions/{agent}/{id}
//	GET    /api/sessions/{agent}/{id}/context
//	GET    /api/sessions/{agent}/{id}/context/status
//	GET    /api/sessions/{agent}/{id}/context/inspect
//	GET    /api/sessions/{agent}/{id}/context/history?depth=
//	POST   /api/sessions/{agent}/{id}/context/compact  ({"focus","layer","dry_run"})
//	GET    /api/sessions/{agent}/{id}/context/grep?q=&regex=&max=
//	GET    /api/sessions/{agent}/{id}/usage
//	POST   /api/sessions/{agent}/{id}/restore   (whole session: {"pristine":true})
//	GET    /api/sessions/{agent}/{id}/entries/{entryId}/extracted?preview=200&key=&raw=
//	POST   /api/sessions/{agent}/{id}/entries/{entryId}/restore
//	PUT    /api/sessions/{agent}/{id}/entries/{entryId}/meta
//	POST   /api/sessions/{agent}/{id}/entries/{entryId}/extractable
//	POST   /api/prune/run, /api/retention/run, /api/cron/jobs/{name}/run
//	GET    /api/cron/status, /api/scheduler/status
//	GET    /api/trash
//	POST   /api/trash/{agent}/{id}/restore
//	DELETE /api/trash/{agent}/{id}
//	GET    /api/plugin/v1/health                (the OpenClaw plugin: its key is accepted; what its calls got)
//	POST   /api/plugin/v1/source                (the OpenClaw plugin: store a tool result; body cap MaxSourceBodyBytes)
//	POST   /api/plugin/v1/tool                  (the OpenClaw plugin: one tool call; allowed in read-only mode, where only reads run)
//	POST   /api/plugin/v1/assemble              (the OpenClaw context engine: one turn's view; body cap MaxAssembleBodyBytes; read-only mode saves no decision)
//	POST   /api/plugin/v1/compact               (the OpenClaw context engine: compact the view; read-only mode compacts nothing)
//	POST   /api/plugin/v1/compaction            (a host that writes its own compaction entry, pi: BrainSurgeon's summary and cut; writes nothing)
//
// {id} names a session of {agent} the way the CLI does after "agent/"
// (Backend.ResolveAmong): its id, its transcript's file stem, a unique prefix
// of either of 8 characters or more, or a session key (or a unique suffix
// of one).
//
// Security: X-API-Key is compared in constant time with every configured
// key; CORS headers are sent only to listed origins (preflights too);
// read-only mode refuses every write; every path parameter is checked before
// routing ("..", "%2e%2e", absolute paths, NUL bytes, unicode slashes and
// any character outside letters, digits, "-", "_", "." and ":" are a 400
// naming the parameter), and sessions are only ever found among the ones the
// store lists, so no path is built from a request; request bodies are
// capped.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// DefaultMaxBodyBytes caps request bodies when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 1 << 20

// Backend is what the API needs of the backends beyond the
// installation's Store: the CLI's resolver, and for GET /api/disk where
// each listed session's transcript is kept and what a file found beside
// the transcripts is. It is the one part of an installation that varies
// with the backends; backend.Set implements it.
type Backend interface {
	// ResolveAmong finds the session name names among refs as the CLI
	// does (its id, its transcript's file stem, a unique prefix of
	// either of 8 characters or more, a session key or a unique suffix
	// of one); errors wrap brainsurgeon.ErrNotFound, ErrAmbiguous or
	// ErrInvalid.
	ResolveAmong(refs []bs.SessionRef, name string) (bs.SessionRef, error)
	// SessionFile returns the file that keeps ref's transcript; shared
	// is true when it is a database that keeps many sessions (with its
	// -wal, -shm and -journal files), false for a transcript file in a
	// session directory. An error means the session has no file.
	SessionFile(ref bs.SessionRef) (path string, shared bool, err error)
	// ClassifyFile names the kind of a file found in a session directory
	// by its name: "transcript", "store", "other", or the kind of a
	// host's leftover ("lock", "reset-archive", "deleted-archive",
	// "backup", "checkpoint", "corrupt", "trajectory").
	ClassifyFile(name string) string
	// SideDir returns the directory that keeps ref's extracted values; an
	// error means the session has none.
	SideDir(ref bs.SessionRef) (string, error)
}

// Options configure the API. Installation.Store, Installation.Side and
// Backend are required.
type Options struct {
	// Installation is the opened installation: its Store lists, opens and
	// writes sessions, its Side holds extracted values, its AgentsDir and
	// StateDir say where they live (backend.Open's Set holds it).
	Installation bs.Installation
	// Backend answers what the API needs of the backends beyond the
	// Store (backend.Open's Set is one).
	Backend Backend
	// Restorer restores values, sets "_extractable" and answers
	// get_context. When nil, the Daemon's Restorer (daemon.Daemon.Restorer,
	// which follows the runtime config and serialises write-backs of one
	// session with the daemon's passes) gives it; else (no Daemon, or a
	// nil Restorer) one is made over Installation with the default policy,
	// whose restore log (restore.Restorer.Restores) is Engine when set.
	Restorer *restore.Restorer
	// Daemon, when not nil, is the daemon core the API serves: its config
	// service (GET and POST /api/config), its jobs run now and its
	// scheduler's status, the Restorer and the context engine that follow
	// its runtime config, and the compaction settings and source
	// thresholds of that config. New also takes from it what is left
	// empty here: Trash (a trash over Installation, logging through the
	// daemon's logger), EngineMeter (the daemon's, which its Status
	// reports) and Logger; and ReadOnly is set when the daemon is
	// read-only. Installation and Backend are still the caller's (over the
	// daemon's agents dir: internal/wiring.OpenFor opens them). Nil
	// answers 501 on the config and job endpoints, serves the default
	// config's compaction and source settings, and gives no engine unless
	// Engine is set.
	Daemon *daemon.Daemon
	// Trash is the session trash (a trashed session's transcript,
	// extracted values and child sessions go together; a backend that
	// cannot trash a session, SQLite, where rows are never deleted, is
	// answered 422); nil answers 501 on its endpoints, unless Daemon
	// gives one.
	Trash *trash.Trash
	// Engine is the context engine the plugin's assemble and compact
	// requests, the engine paths of its tools and the session detail's
	// "engine" member use. When nil, the Daemon's engine
	// (daemon.Daemon.Engine) is used at each request; with neither, those
	// requests answer 501 and nothing else changes. The caller owns it
	// (and closes it).
	Engine *engine.Engine
	// EngineMeter counts the plugin's assemble calls and how long they
	// took, for GET /api/health and GET /api/plugin/v1/health ("engine");
	// nil means the Daemon's (so that its status shows the same counts),
	// else a Meter of the server's own.
	EngineMeter *engine.Meter
	// Compaction, when not nil, is what the context endpoints count and
	// summarize with; nil means the runtime config's "compaction" object
	// (the Daemon's, else the defaults), with the summarizer model from
	// that config or the environment.
	Compaction *Compaction
	// APIKeys are the accepted X-API-Key values; none (and no KeyFile)
	// means open access. The caller reads them from the environment:
	// security settings never come from the config file.
	APIKeys []string
	// KeyFile, when not "", is a file of more accepted keys, one a line
	// (ReadKeyFile), kept in step with the file: it is checked at request
	// time, at most once every KeyFileInterval, and re-read when it
	// changed, so a rotated key works and the old one is refused within
	// about that interval, without a restart. A file that does not exist
	// yet gives no keys; once it has existed, keys stay required even when
	// it is removed (its keys are then no longer accepted, APIKeys still
	// are). A file that exists at New but holds no key is an error; one
	// that becomes unusable later gives no keys until it is fixed. Its
	// path (never a key) is reported by /api/health, /api/auth-info and
	// /api/config/env.
	KeyFile string
	// KeyFileInterval is how often at most KeyFile is checked; 0 means
	// DefaultKeyFileInterval, a negative value at every request (tests).
	KeyFileInterval time.Duration
	// CORSOrigins are the origins that get CORS headers ("*" allows any).
	CORSOrigins []string
	// ReadOnly refuses every write with 403; a read-only Daemon sets it.
	ReadOnly bool
	// AutoRefreshMS is echoed by /api/config/env for the UI (default
	// 10000).
	AutoRefreshMS int
	// MaxBodyBytes caps request bodies (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Version is reported by /api/health.
	Version string
	// UI, when not nil, serves every path outside /api/ (the web UI:
	// ui.Handler() of package api/ui).
	UI http.Handler
	// Logger receives a record per failed request; nil means the
	// Daemon's logger, else discard.
	Logger bs.Logger
}

// stores is the installation the handlers reach, with the Backend beside
// its Store.
type stores struct {
	bs.Installation
	Backend Backend
}

// server is the API's handler.
type server struct {
	opts     Options
	set      stores
	restorer *restore.Restorer
	mux      *http.ServeMux
	keys     *keyRing
	log      bs.Logger
	// plugin keeps what the plugin's calls got (GET /api/health).
	plugin pluginMonitor
	// meter counts the assemble calls (Options.EngineMeter).
	meter *engine.Meter
	cache *statsCache
	// sideStats spares GET …/usage re-reading unchanged side records.
	sideStats sideStatsCache
	// status caches each session's measured context by its Version;
	// window names the window of a session's model from the host config.
	statusCache *compact.StatusCache
	window      compact.WindowFunc
	maxBody     int64
	started     time.Time
	// sourceSlots bounds the POST /api/plugin/v1/source requests served at
	// once (each holds a whole tool result, several times over);
	// sources makes a source record's check and replacement one step.
	sourceSlots chan struct{}
	sources     agenttools.Sources
	// testEngine, set by the package's tests only, replaces the engine.
	testEngine contextEngine
}

// New returns the API handler. It checks the options: no Store, Side or
// Backend, an empty API key or an origin that is not a URL origin is an
// error wrapping brainsurgeon.ErrInvalid. With a Daemon, it fills the
// options the Daemon gives (see Options.Daemon).
func New(opts Options) (http.Handler, error) {
	if opts.Installation.Store == nil || opts.Installation.Side == nil || opts.Backend == nil {
		return nil, fmt.Errorf("api: Options.Installation must hold an opened installation's Store and Side store, and Options.Backend its Backend (backend.Open's Set has them): %w", bs.ErrInvalid)
	}
	if d := opts.Daemon; d != nil {
		if opts.Trash == nil {
			t := trash.For(opts.Installation)
			t.Logger = d.Logger()
			opts.Trash = t
		}
		if opts.EngineMeter == nil {
			opts.EngineMeter = d.EngineMeter()
		}
		if opts.Logger == nil {
			opts.Logger = d.Logger()
		}
		opts.ReadOnly = opts.ReadOnly || d.ReadOnly()
	}
	s := &server{opts: opts, set: stores{Installation: opts.Installation, Backend: opts.Backend}, restorer: opts.Restorer, log: bs.LoggerOrDiscard(opts.Logger),
		cache: newStatsCache(), statusCache: compact.NewStatusCache(0), maxBody: opts.MaxBodyBytes, started: time.Now(),
		sourceSlots: make(chan struct{}, MaxSourceRequests), meter: opts.EngineMeter}
	if s.meter == nil {
		s.meter = &engine.Meter{}
	}
	s.window = compactwire.HostWindow(opts.Installation.AgentsDir, s.log)
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.restorer == nil {
		s.restorer = restore.New(opts.Installation.Store, opts.Installation.Side, opts.Installation.StateDir)
		s.restorer.Logger = opts.Logger
		if opts.Engine != nil {
			// The engine is the restore log: a value restored here is
			// shown in full by its view and protected by every pass.
			s.restorer.Restores = opts.Engine
		}
	}
	keys, err := newKeyRing(opts, s.log)
	if err != nil {
		return nil, err
	}
	s.keys = keys
	for _, o := range opts.CORSOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return nil, fmt.Errorf("api: CORS origin %q: expected scheme://host[:port], such as http://localhost:3000: %w", o, bs.ErrInvalid)
		}
	}
	s.routes()
	return s, nil
}

// route is one endpoint: its pattern and whether it is public (no key
// needed) or a write (refused in read-only mode).
type route struct {
	pattern string
	public  bool
	h       http.HandlerFunc
	// maxBody, when positive, is the route's body cap instead of
	// Options.MaxBodyBytes (the larger of the two applies).
	maxBody int64
	// readOnlyOK lets a write method through in read-only mode: the
	// handler refuses the calls that would write itself.
	readOnlyOK bool
}

func (s *server) routeTable() []route {
	return []route{
		{"GET /api/health", true, s.answer(s.health), 0, false},
		{"GET /api/auth-info", true, s.answer(s.authInfo), 0, false},
		{"GET /auth-info", true, s.answer(s.authInfo), 0, false},
		{"GET /api/config", true, s.answer(s.getConfig), 0, false},
		{"POST /api/config", false, s.answer(s.postConfig), 0, false},
		{"GET /api/config/env", true, s.answer(s.configEnv), 0, false},
		{"GET /api/agents", false, s.answer(s.agents), 0, false},
		{"GET /api/sessions", false, s.answer(s.sessions), 0, false},
		{"GET /api/disk", false, s.answer(s.disk), 0, false},
		{"GET /api/doctor", false, s.answer(s.doctorReport), 0, false},
		{"GET /api/agents/{agent}/sessions", false, s.answer(s.sessions), 0, false},
		{"GET /api/sessions/{agent}/{id}", false, s.answer(s.detail), 0, false},
		{"DELETE /api/sessions/{agent}/{id}", false, s.answer(s.deleteSession), 0, false},
		{"GET /api/sessions/{agent}/{id}/context", false, s.answer(s.getContext), 0, false},
		{"GET /api/sessions/{agent}/{id}/context/status", false, s.answer(s.contextStatus), 0, false},
		{"GET /api/sessions/{agent}/{id}/context/inspect", false, s.answer(s.contextInspect), 0, false},
		{"GET /api/sessions/{agent}/{id}/context/history", false, s.answer(s.contextHistory), 0, false},
		{"POST /api/sessions/{agent}/{id}/context/compact", false, s.answer(s.contextCompact), 0, false},
		{"GET /api/sessions/{agent}/{id}/context/grep", false, s.contextGrep, 0, false},
		{"GET /api/sessions/{agent}/{id}/usage", false, s.answer(s.usage), 0, false},
		{"POST /api/sessions/{agent}/{id}/restore", false, s.answer(s.restoreAll), 0, false},
		{"GET /api/sessions/{agent}/{id}/entries/{entryId}/extracted", false, s.extracted, 0, false},
		{"POST /api/sessions/{agent}/{id}/entries/{entryId}/restore", false, s.answer(s.restoreEntry), 0, false},
		{"PUT /api/sessions/{agent}/{id}/entries/{entryId}/meta", false, s.answer(s.setExtractable), 0, false},
		{"POST /api/sessions/{agent}/{id}/entries/{entryId}/extractable", false, s.answer(s.setExtractable), 0, false},
		{"POST /api/prune/run", false, s.answer(s.runPrune), 0, false},
		{"POST /api/retention/run", false, s.answer(s.runRetention), 0, false},
		{"POST /api/cron/jobs/{name}/run", false, s.answer(s.runJob), 0, false},
		{"GET /api/cron/status", false, s.answer(s.status), 0, false},
		{"GET /api/scheduler/status", false, s.answer(s.status), 0, false},
		{"GET /api/trash", false, s.answer(s.trashList), 0, false},
		{"POST /api/trash/{agent}/{id}/restore", false, s.answer(s.trashRestore), 0, false},
		{"DELETE /api/trash/{agent}/{id}", false, s.answer(s.trashDelete), 0, false},
		{pattern: "GET /api/plugin/v1/health", h: s.pluginOriginGuard(s.answer(s.pluginHealth))},
		{pattern: "POST /api/plugin/v1/source", h: s.pluginGuard(s.answer(s.pluginSource)), maxBody: MaxSourceBodyBytes},
		{pattern: "POST /api/plugin/v1/tool", h: s.pluginGuard(s.answer(s.pluginTool)), readOnlyOK: true},
		{pattern: "POST /api/plugin/v1/assemble", h: s.pluginGuard(s.answer(s.pluginAssemble)), maxBody: MaxAssembleBodyBytes, readOnlyOK: true},
		{pattern: "POST /api/plugin/v1/compact", h: s.pluginGuard(s.answer(s.pluginCompact)), readOnlyOK: true},
		{pattern: "POST /api/plugin/v1/compaction", h: s.pluginGuard(s.answer(s.hostCompaction)), readOnlyOK: true},
	}
}

// Routes returns the pattern of every endpoint ("METHOD /path/{param}"),
// in the order the package documentation lists them.
func Routes() []string {
	var s server
	rt := s.routeTable()
	out := make([]string, len(rt))
	for i, r := range rt {
		out[i] = r.pattern
	}
	return out
}

func (s *server) routes() {
	s.mux = http.NewServeMux()
	for _, rt := range s.routeTable() {
		h := s.guard(rt)
		if _, path, _ := strings.Cut(rt.pattern, " "); strings.HasPrefix(path, "/api/plugin/") {
			h = s.monitorPlugin(h, path == "/api/plugin/v1/health")
		}
		s.mux.Handle(rt.pattern, h)
	}
	// A known path with another method: 405 in JSON, with Allow.
	allow := map[string][]string{}
	var paths []string
	for _, rt := range s.routeTable() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		if allow[path] == nil {
			paths = append(paths, path)
		}
		allow[path] = append(allow[path], method)
	}
	for _, path := range paths {
		methods := strings.Join(allow[path], ", ")
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodOptions {
				w.Header().Set("Allow", methods+", OPTIONS")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Allow", methods)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, methods))
		})
	}
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	if s.opts.UI != nil {
		s.mux.Handle("/", s.opts.UI)
	}
}

// isWrite reports whether a method changes something.
func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// guard wraps a route's handler with auth, read-only mode and the body cap.
func (s *server) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rt.public && s.keys.required() {
			key := r.Header.Get("X-API-Key")
			if key == "" {
				writeError(w, http.StatusUnauthorized, "API key required: pass it in the X-API-Key header")
				return
			}
			if !s.keys.ok(key) {
				writeError(w, http.StatusForbidden, "invalid API key")
				return
			}
		}
		if s.opts.ReadOnly && isWrite(r.Method) && !rt.readOnlyOK {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": "the server is in read-only mode: " + r.Method + " " + r.URL.Path + " would write", "read_only": true})
			return
		}
		limit := max(s.maxBody, rt.maxBody)
		if r.ContentLength > limit {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		rt.h(w, r)
	})
}

// restoreLog returns the restore log of the server's context engine (see
// bs.RestoreLog), nil when it has none.
func (s *server) restoreLog() bs.RestoreLog {
	if l, ok := s.engineFor().(bs.RestoreLog); ok {
		return l
	}
	return nil
}

// restorerFor returns the Restorer of a request (see Options.Restorer).
func (s *server) restorerFor() *restore.Restorer {
	if s.opts.Restorer == nil && s.opts.Daemon != nil {
		if r := s.opts.Daemon.Restorer(); r != nil {
			return r
		}
	}
	return s.restorer
}

// ServeHTTP applies CORS, checks the path parameters and routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" || r.URL.Path == "/auth-info"
	if origin := r.Header.Get("Origin"); origin != "" && api {
		allowed := s.originAllowed(origin)
		w.Header().Add("Vary", "Origin")
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-API-Key")
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
			h.Set("Access-Control-Max-Age", "600")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if !allowed {
				writeError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed (BRAINSURGEON_CORS_ORIGINS)", origin))
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if api {
		if err := s.checkPath(r); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *server) originAllowed(origin string) bool {
	return slices.Contains(s.opts.CORSOrigins, origin) || slices.Contains(s.opts.CORSOrigins, "*")
}

// checkPath validates every segment of an /api path before routing, so
// that "..", encoded separators and the like never reach the router (which
// would redirect a path it cleans) nor a handler. The error names the
// route's parameter at the bad segment when a route matches.
func (s *server) checkPath(r *http.Request) error {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	bad := map[int]error{}
	for i, seg := range segs {
		v, err := url.PathUnescape(seg)
		if err != nil {
			bad[i] = fmt.Errorf("found %q, which is not a valid escaped path segment: %v", seg, err)
			continue
		}
		if v == "" && i == len(segs)-1 {
			// A trailing slash: an empty parameter when a route has
			// one there, else the router answers 404.
			c := r.Clone(r.Context())
			c.URL = &url.URL{Path: "/" + strings.Join(append(slices.Clone(segs[:i]), "x"), "/")}
			if _, pattern := s.mux.Handler(c); patternParams(pattern)[i] == "" {
				continue
			}
		}
		if err := checkSegment(v); err != nil {
			bad[i] = err
		}
	}
	if len(bad) == 0 {
		return nil
	}
	// Find the parameter's name: route a copy whose bad segments are
	// replaced by a harmless one.
	clean := slices.Clone(segs)
	for i := range bad {
		clean[i] = "x"
	}
	c := r.Clone(r.Context())
	c.URL = &url.URL{Path: "/" + strings.Join(clean, "/")}
	_, pattern := s.mux.Handler(c)
	names := patternParams(pattern)
	first := slices.Min(slices.Collect(maps.Keys(bad)))
	name := fmt.Sprintf("path segment %d", first+1)
	if n, ok := names[first]; ok {
		name = paramName(n)
	}
	return segmentError(name, bad[first])
}

// patternParams maps segment positions of a ServeMux pattern to its
// wildcard names.
func patternParams(pattern string) map[int]string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = pattern[i+1:]
	}
	out := map[int]string{}
	for i, seg := range strings.Split(strings.TrimPrefix(pattern, "/"), "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out[i] = strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}")
		}
	}
	return out
}

// paramName returns the user-facing (snake_case) name of a wildcard.
func paramName(wildcard string) string {
	switch wildcard {
	case "id":
		return "session_id"
	case "entryId":
		return "entry_id"
	}
	return wildcard
}

// writeJSON sends v as JSON with a status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client may be gone; nothing to do about it
}

// writeError sends {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// statusOf maps a library error to an HTTP status (see the package
// documentation).
func statusOf(err error) int {
	var mbe *http.MaxBytesError
	var ve *config.ValidationError
	var nw notWired
	var se statusError
	switch {
	case errors.As(err, &se):
		return se.status
	case errors.As(err, &nw):
		return http.StatusNotImplemented
	case errors.Is(err, bs.ErrUnavailable):
		// A remote side store that cannot be reached now: the values
		// are kept there, and the same request may succeed later.
		return http.StatusServiceUnavailable
	case errors.Is(err, engine.ErrNeedFull):
		return http.StatusConflict
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, &ve), errors.Is(err, bs.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, bs.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, bs.ErrUnsupported):
		return http.StatusUnprocessableEntity
	case errors.Is(err, bs.ErrBusy), errors.Is(err, bs.ErrChanged), errors.Is(err, bs.ErrAmbiguous),
		errors.Is(err, prune.ErrDisabled):
		return http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers an error from the library.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status >= 500 && status != http.StatusNotImplemented {
		s.log.Error("api request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	} else {
		s.log.Debug("api request refused", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	}
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		fields := map[string]string{}
		for _, fe := range ve.Errors {
			fields[fe.Field] = fe.Message
		}
		writeJSON(w, status, map[string]any{"error": err.Error(), "fields": fields})
		return
	}
	if errors.Is(err, engine.ErrNeedFull) {
		// The assemble wire: the plugin resends the whole list of
		// messages when it reads need_full.
		writeJSON(w, status, map[string]any{"error": err.Error(), "need_full": true})
		return
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeError(w, status, fmt.Sprintf("request body is larger than the limit of %d bytes", mbe.Limit))
		return
	}
	writeError(w, status, err.Error())
}

// notWired is the error of an endpoint whose service was not given
// (answered 501).
type notWired struct{ what, option string }

func (e notWired) Error() string {
	return fmt.Sprintf("%s is not available: this server was started without a %s (api.Options.%s)", e.what, strings.ToLower(e.option), e.option)
}

// answer adapts a handler that returns its answer: an error is answered
// by fail, a value is sent as JSON with 200.
func (s *server) answer(h func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// queryInt reads a non-negative integer query parameter.
func queryInt(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("query parameter %s: expected a non-negative integer, got %q: %w", name, v, bs.ErrInvalid)
	}
	if max > 0 && n > max {
		return 0, fmt.Errorf("query parameter %s: expected at most %d, got %d: %w", name, max, n, bs.ErrInvalid)
	}
	return n, nil
}

// readBody reads a request body (capped by guard).
func readBody(r *http.Request) ([]byte, error) {
	return io.ReadAll(r.Body)
}

// decodeBody decodes an optional JSON object body into v; unknown members
// are an error naming them.
func decodeBody(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: expected a JSON object of the documented members: %v: %w", err, bs.ErrInvalid)
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("request body: %d bytes after the JSON object, expected one object: %w", len(rest), bs.ErrInvalid)
	}
	return nil
}
