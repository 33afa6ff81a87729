package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
)

// SessionInfo is one session in the sessions list.
type SessionInfo struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Key       string `json:"session_key,omitempty"`
	Label     string `json:"label,omitempty"`
	// Backend is "jsonl" or "sqlite".
	Backend string `json:"backend"`
	// Status is OpenClaw's status of the session in sessions.json
	// ("running", "done", …), "" when it has none.
	Status string `json:"status"`
	// Size is the transcript's size in bytes (for SQLite, the size of its
	// rows' JSON).
	Size int64 `json:"size"`
	// Entries counts entry lines, Messages the message entries, ToolCalls
	// the tool calls (toolCall blocks, flat tool_call entries).
	Entries   int `json:"entries"`
	Messages  int `json:"messages"`
	ToolCalls int `json:"tool_calls"`
	// Tokens is the size of the session's current context, the next
	// turn's, calibrated by the transcript's recorded usage: the same
	// figure as GET …/context/status "tokens" (with the config's
	// tokenizer); 0 when it could not be measured.
	Tokens int64 `json:"tokens"`
	// LastUsageTokens is the usage the latest assistant message recorded
	// that is not zero (totalTokens, else input + output + cacheRead +
	// cacheWrite): the context of the last turn as the provider billed it,
	// which the turns after it and compactions have changed since; 0 when
	// none is recorded.
	LastUsageTokens int64 `json:"last_usage_tokens"`
	// Updated is the latest entry timestamp, else the transcript's
	// modification time.
	Updated time.Time `json:"updated,omitzero"`
	// Extracted counts the entries holding at least one placeholder of
	// their own id now.
	Extracted int `json:"extracted"`
	// Malformed counts malformed lines.
	Malformed int `json:"malformed"`
	// Health is the session's health as doctor.Diagnose tells it: "ok",
	// "warn" (placeholders without value, pending write-backs, malformed
	// lines) or "broken" (tool calls or results without their partner on
	// the active path: providers reject the session's requests); "" when
	// it could not be diagnosed. Problems counts the diagnosis' findings;
	// the session detail has them in full under "doctor", GET /api/doctor
	// for every session. Like the counts above, it is computed again
	// when the transcript changes (a write-back queued meanwhile shows
	// when the transcript next changes, or in the detail at once).
	Health   string `json:"health"`
	Problems int    `json:"problems"`
	// ProblemKinds counts the problems per kind (doctor.Kind…), for the
	// health pill's title; absent when there are none.
	ProblemKinds map[string]int `json:"problem_kinds,omitempty"`
	// EngineView is the size of the last view BrainSurgeon's context
	// engine sent the model for the session (engine.ViewSize), absent when
	// the engine never served it; EngineCompactions counts the engine's
	// summaries, which the transcript does not hold. Both are read afresh
	// on each list (the engine's state changes without the transcript).
	EngineView        *engine.ViewSize `json:"engine_view,omitempty"`
	EngineCompactions int              `json:"engine_compactions,omitempty"`
	// Error says why the session could not be read (the other counts are
	// then zero).
	Error string `json:"error,omitempty"`
	// undiagnosed is true when the diagnosis failed: the info is not
	// cached, so the next list tries again.
	undiagnosed bool
}

// agentName is the agent a ref belongs to in the API: its Agent, or for a
// pi session (no agent) its Label (the project dir).
func agentName(ref bs.SessionRef) string {
	if ref.Agent != "" {
		return ref.Agent
	}
	return ref.Label
}

// statsCache keeps each session's counts, keyed by its store's version
// (Store.Stat). The list endpoint re-reads a transcript only when
// its version changed, so listing 10,000 unchanged sessions costs a
// discovery and a stat per session, not 10,000 parses. Entries of
// sessions no longer listed are dropped on each list.
type statsCache struct {
	mu sync.Mutex
	m  map[string]cached
}

type cached struct {
	ver bs.Version
	// tok names how Tokens was counted (the config's tokenizer).
	tok  string
	info SessionInfo
}

func newStatsCache() *statsCache { return &statsCache{m: map[string]cached{}} }

// list returns the infos of refs, reading the sessions whose stamp
// changed, in parallel. When all is true refs are every session the store
// lists, and the entries of the others are dropped.
func (c *statsCache) list(ctx context.Context, s *server, refs []bs.SessionRef, all bool) []SessionInfo {
	out := make([]SessionInfo, len(refs))
	vers := make([]bs.Version, len(refs))
	stamped := make([]bool, len(refs))
	var todo []int
	cp, cerr := s.compaction(ctx)
	if cerr != nil {
		s.log.Warn("sessions list: the compaction config could not be read; context tokens are counted with the defaults", "error", cerr.Error())
		tok, _ := compactwire.TokenOptions("") // the default, calibrated: never an error
		tok.Window = s.window
		cp = Compaction{Settings: compact.DefaultSettings(), Tokens: tok}
	}
	tok := tokensKey(cp)
	for i, r := range bs.StatMany(ctx, s.set.Store, refs) {
		vers[i], stamped[i] = r.Stat.Version, r.Err == nil && !r.Stat.Version.IsZero()
	}
	c.mu.Lock()
	for i, ref := range refs {
		if e, ok := c.m[ref.Identity()]; ok && stamped[i] && e.ver.Equal(vers[i]) && e.tok == tok {
			out[i] = e.info
			continue
		}
		todo = append(todo, i)
	}
	c.mu.Unlock()
	if len(todo) > 0 {
		doc := s.listDoctor()
		work := make(chan int)
		var wg sync.WaitGroup
		for range min(runtime.GOMAXPROCS(0), len(todo), 8) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					out[i] = s.readInfo(ctx, doc, refs[i], cp)
				}
			}()
		}
		for _, i := range todo {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	c.mu.Lock()
	next := c.m
	if all {
		next = make(map[string]cached, len(refs))
	}
	for i, ref := range refs {
		if stamped[i] && out[i].Error == "" && !out[i].undiagnosed {
			next[ref.Identity()] = cached{ver: vers[i], tok: tok, info: out[i]}
		} else {
			delete(next, ref.Identity())
		}
	}
	c.m = next
	c.mu.Unlock()
	// The status comes from the fresh discovery, never from the cache;
	// so does the engine's view.
	for i, ref := range refs {
		out[i].Status = ref.Status
		out[i].Key, out[i].Label = ref.Key, ref.Label
		out[i].EngineView, out[i].EngineCompactions = nil, 0
		if st := s.engineStatus(ctx, ref); st != nil {
			out[i].EngineView, out[i].EngineCompactions = st.View, st.Compactions
		}
	}
	return out
}

// usageLine is the part of an assistant message line that holds its
// recorded usage (pi/OpenClaw shape and the flat shape).
type usageLine struct {
	Message struct {
		Usage *usage `json:"usage"`
	} `json:"message"`
	Usage *usage `json:"usage"`
}

type usage struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CacheRead   int64 `json:"cacheRead"`
	CacheWrite  int64 `json:"cacheWrite"`
	TotalTokens int64 `json:"totalTokens"`
}

func (u *usage) total() int64 {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

var usageKey = []byte(`"usage"`)

// tokensKey names how cp counts tokens, for the sessions cache.
func tokensKey(cp Compaction) string {
	name := "chars/4"
	if cp.Tokens.Tokenizer != nil {
		name = cp.Tokens.Tokenizer.Name()
	}
	return fmt.Sprintf("%s|%t", name, cp.Tokens.Estimator != nil)
}

// readInfo reads one session in one pass over its lines, then measures
// its current context as the context status does (and leaves the
// measurement in the status cache), and diagnoses it with doc.
func (s *server) readInfo(ctx context.Context, doc *doctor.Doctor, ref bs.SessionRef, cp Compaction) SessionInfo {
	info := SessionInfo{Agent: agentName(ref), SessionID: ref.ID, Backend: backendOf(ref)}
	diag := doc.Reading() // the diagnosis is made in the same read
	v := &bs.Visitor{
		Want: diag.Want, // the counts need the envelope only
		Visit: func(e *bs.Entry) error {
			if err := diag.Visit(e); err != nil {
				return err
			}
			if e.Kind != bs.KindEntry {
				return nil
			}
			if extract.HoldsOwnPlaceholder(e.Raw, e) {
				info.Extracted++
			}
			if e.Type == "tool_call" {
				info.ToolCalls++
			}
			if (e.Role == "assistant" || e.Type == "assistant") && bytes.Contains(e.Raw, usageKey) {
				var ul usageLine
				if json.Unmarshal(e.Raw, &ul) == nil {
					u := ul.Message.Usage
					if u == nil {
						u = ul.Usage
					}
					// A zero usage is a turn the provider did not
					// report (an error, a mock): the last real one stands.
					if u != nil && u.total() > 0 {
						info.LastUsageTokens = u.total()
					}
				}
			}
			return nil
		},
	}
	var ver bs.Version // seen before the read: a change during it is measured again next time
	var mtime time.Time
	if r := bs.StatMany(ctx, s.set.Store, []bs.SessionRef{ref})[0]; r.Err == nil {
		ver, mtime = r.Stat.Version, r.Stat.ModTime
	}
	tr, err := s.set.Store.Open(ctx, ref, v)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	info.Size = tr.Version().Size()
	if rep, err := s.statusCache.StatusOf(ctx, tr, ver, cp.Settings, cp.Tokens); err == nil {
		info.Tokens = int64(rep.Tokens)
	} else {
		s.log.Warn("context of a session not measured", "session", ref.String(), "error", err.Error())
	}
	for _, n := range tr.Nodes() {
		switch n.Kind {
		case bs.KindMalformed:
			info.Malformed++
		case bs.KindEntry:
			info.Entries++
			if n.Type == "message" {
				info.Messages++
			}
			for _, b := range n.BlockTypes {
				if b == "toolCall" {
					info.ToolCalls++
				}
			}
			if n.Timestamp.After(info.Updated) {
				info.Updated = n.Timestamp
			}
		}
	}
	if info.Updated.IsZero() && ref.Backend != bs.BackendSQLite {
		info.Updated = mtime
	}
	if rep, err := diag.Report(ctx, tr); err == nil {
		info.setHealth(rep)
	} else {
		info.undiagnosed = true
		s.log.Warn("session not diagnosed", "session", ref.String(), "error", err.Error())
	}
	return info
}

// setHealth copies a diagnosis' health and problem count into info. A
// session with write-backs pending, or that the host was using during the
// diagnosis (its last turn's calls may still get their results), is not
// cached: it is diagnosed again on the next list.
func (info *SessionInfo) setHealth(rep *doctor.Report) {
	info.Health, info.Problems, info.undiagnosed = rep.Health, len(rep.Problems), rep.Pending > 0 || rep.Busy
	info.ProblemKinds = nil
	for _, p := range rep.Problems {
		if info.ProblemKinds == nil {
			info.ProblemKinds = map[string]int{}
		}
		info.ProblemKinds[p.Kind]++
	}
}

func backendOf(ref bs.SessionRef) string {
	if ref.Backend == "" {
		return bs.BackendJSONL
	}
	return ref.Backend
}

// listRefs lists every session, optionally of one agent.
func (s *server) listRefs(ctx context.Context, agent string) ([]bs.SessionRef, error) {
	refs, err := bs.ListSessions(ctx, s.set.Store, s.log)
	if err != nil {
		return nil, err
	}
	if agent == "" {
		return refs, nil
	}
	out := refs[:0:0]
	for _, r := range refs {
		if agentName(r) == agent {
			out = append(out, r)
		}
	}
	return out, nil
}

// findSession finds the session named by the request's {agent} and {id}
// among the sessions the store lists (no path is built from the request).
// {id} is what the CLI accepts after "agent/": a session id, the file stem
// of its transcript or a unique prefix of either of 8 characters or more,
// or a session key (or a unique suffix of one on ":" boundaries);
// the CLI's resolver (Backend.ResolveAmong) decides. ?backend= chooses when
// both backends have the session.
func (s *server) findSession(r *http.Request) (bs.SessionRef, error) {
	agent, err := param(r, "agent")
	if err != nil {
		return bs.SessionRef{}, err
	}
	id, err := param(r, "id")
	if err != nil {
		return bs.SessionRef{}, err
	}
	backend := r.URL.Query().Get("backend")
	if backend != "" && backend != bs.BackendJSONL && backend != bs.BackendSQLite {
		return bs.SessionRef{}, fmt.Errorf("query parameter backend: expected %q or %q, got %q: %w", bs.BackendJSONL, bs.BackendSQLite, backend, bs.ErrInvalid)
	}
	refs, err := s.listRefs(r.Context(), agent)
	if err != nil {
		return bs.SessionRef{}, err
	}
	if len(refs) == 0 {
		return bs.SessionRef{}, fmt.Errorf("session %s/%s: agent %q has no sessions: %w", agent, id, agent, bs.ErrNotFound)
	}
	mine := refs
	if backend != "" {
		mine = slices.DeleteFunc(slices.Clone(refs), func(ref bs.SessionRef) bool { return backendOf(ref) != backend })
		if len(mine) == 0 {
			return bs.SessionRef{}, fmt.Errorf("session %s/%s: agent %q has no sessions in the %s store: %w", agent, id, agent, backend, bs.ErrNotFound)
		}
	} else {
		stores := map[string]bool{}
		for _, ref := range refs {
			if ref.ID == id {
				stores[backendOf(ref)] = true
			}
		}
		if len(stores) > 1 {
			return bs.SessionRef{}, fmt.Errorf("session %s/%s is in both stores; add ?backend=jsonl or ?backend=sqlite: %w", agent, id, bs.ErrAmbiguous)
		}
	}
	name := agent + "/" + id
	if strings.Contains(id, ":") {
		name = id // a session key, resolved among the agent's sessions
	}
	ref, err := s.set.Backend.ResolveAmong(mine, name)
	if errors.Is(err, bs.ErrNotFound) && backend != bs.BackendSQLite && !strings.Contains(id, ":") {
		// A file with a transcript's name but not its content is not
		// listed; the store's own resolver names it, so the answer says
		// that the file is not a transcript rather than that no session
		// has this id.
		if _, serr := s.set.Store.Resolve(r.Context(), name); errors.Is(serr, bs.ErrNotTranscript) {
			return bs.SessionRef{}, serr
		}
	}
	return ref, err
}

// AgentInfo is one agent in the agents list.
type AgentInfo struct {
	Agent    string   `json:"agent"`
	Sessions int      `json:"sessions"`
	Backends []string `json:"backends"`
}

func (s *server) agents(r *http.Request) (any, error) {
	refs, err := s.listRefs(r.Context(), "")
	if err != nil {
		return nil, err
	}
	by := map[string]*AgentInfo{}
	var names []string
	for _, ref := range refs {
		a := agentName(ref)
		ai := by[a]
		if ai == nil {
			ai = &AgentInfo{Agent: a, Backends: []string{}}
			by[a] = ai
			names = append(names, a)
		}
		ai.Sessions++
		if b := backendOf(ref); !slices.Contains(ai.Backends, b) {
			ai.Backends = append(ai.Backends, b)
		}
	}
	sort.Strings(names)
	out := make([]AgentInfo, 0, len(names))
	for _, n := range names {
		out = append(out, *by[n])
	}
	return map[string]any{"agents": out}, nil
}

// sessions lists sessions with their counts: GET /api/sessions?agent=A or
// GET /api/agents/{agent}/sessions, paged by ?offset=&limit= (no limit by
// default), sorted by agent then most recently updated first. ?status=S
// keeps the sessions whose OpenClaw status is S ("none" for no status).
func (s *server) sessions(r *http.Request) (any, error) {
	agent := r.URL.Query().Get("agent")
	if r.PathValue("agent") != "" {
		var err error
		if agent, err = param(r, "agent"); err != nil {
			return nil, err
		}
	} else if agent != "" {
		if err := checkSegment(agent); err != nil {
			return nil, fmt.Errorf("%w: %w", segmentError("agent", err), bs.ErrInvalid)
		}
	}
	offset, err := queryInt(r, "offset", 0, 0)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(r, "limit", 0, 0)
	if err != nil {
		return nil, err
	}
	refs, err := s.listRefs(r.Context(), agent)
	if err != nil {
		return nil, err
	}
	infos := s.cache.list(r.Context(), s, refs, agent == "")
	if st := r.URL.Query().Get("status"); st != "" {
		if len(st) > 64 {
			return nil, fmt.Errorf("query parameter status: expected at most 64 bytes: %w", bs.ErrInvalid)
		}
		if st == "none" {
			st = ""
		}
		kept := infos[:0]
		for _, in := range infos {
			if in.Status == st {
				kept = append(kept, in)
			}
		}
		infos = kept
	}
	sort.SliceStable(infos, func(i, j int) bool {
		if infos[i].Agent != infos[j].Agent {
			return infos[i].Agent < infos[j].Agent
		}
		return infos[i].Updated.After(infos[j].Updated)
	})
	var total int64
	agents := []string{}
	for _, in := range infos {
		total += in.Size
		if !slices.Contains(agents, in.Agent) {
			agents = append(agents, in.Agent)
		}
	}
	n := len(infos)
	page := infos[min(offset, n):]
	if limit > 0 && limit < len(page) {
		page = page[:limit]
	}
	return map[string]any{"sessions": page, "agents": agents, "total": n,
		"total_size": total, "offset": offset, "limit": limit}, nil
}
