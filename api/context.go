package api

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
	"github.com/brainsurgeon/brainsurgeon/recall"
)

// Bounds of the context endpoints' query parameters.
const (
	// DefaultHistoryDepth is the number of compactions
	// GET …/context/history lists when ?depth= is not given;
	// MaxHistoryDepth the most it lists.
	DefaultHistoryDepth = 20
	MaxHistoryDepth     = 1000
	// DefaultGrepHits is the number of hits GET …/context/grep sends when
	// ?max= is not given; MaxGrepHits the most it sends (as recall_grep).
	DefaultGrepHits = 100
	MaxGrepHits     = agenttools.MaxGrepHits
	// MaxGrepPattern bounds ?q= in bytes (as recall_grep's pattern).
	MaxGrepPattern = agenttools.MaxGrepPattern
	// MaxFocus bounds the focus of a compaction in bytes.
	MaxFocus = 4096
)

// Compaction is what the context endpoints count tokens and summarize
// with (Options.Compaction).
type Compaction struct {
	// Settings are the layers' thresholds.
	Settings compact.Settings
	// Tokens say how tokens are counted.
	Tokens compact.TokenOptions
	// Summarizer returns the summarizer of one compaction; nil means the
	// deterministic summarizer alone.
	Summarizer func() compact.Summarizer
	// KeepAfterRestore is how long a value the agent restored stays
	// protected from the prune layer and out of a summary; 0 means the
	// default (extract.DefaultPolicy).
	KeepAfterRestore time.Duration
}

// compaction returns the compaction setup of a request: Options.Compaction
// when given, else the one of the runtime config's "compaction" object
// (thresholds, tokenizer; the summarizer model from the config or the
// environment, see internal/compactwire), else of the default config.
func (s *server) compaction(ctx context.Context) (Compaction, error) {
	if s.opts.Compaction != nil {
		cp := *s.opts.Compaction
		if cp.Tokens.Window == nil {
			cp.Tokens.Window = s.window
		}
		return cp, nil
	}
	c := config.DefaultCompaction()
	var keep time.Duration
	if s.opts.Daemon != nil {
		cfg := s.opts.Daemon.Config().Get()
		c, keep = cfg.Compaction, cfg.KeepAfterRestore()
	}
	t, err := compactwire.New(c, s.opts.Logger)
	if err != nil {
		return Compaction{}, err
	}
	t.Tokens.Window = s.window
	return Compaction{Settings: t.Settings, Tokens: t.Tokens, Summarizer: func() compact.Summarizer { return t.Summarizer() },
		KeepAfterRestore: keep}, nil
}

// openContext finds the session of a request, opens its transcript and
// returns the compaction setup.
func (s *server) openContext(r *http.Request) (bs.Transcript, Compaction, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return nil, Compaction{}, err
	}
	cp, err := s.compaction(r.Context())
	if err != nil {
		return nil, cp, err
	}
	tr, err := s.set.Store.Open(r.Context(), ref, nil)
	if err != nil {
		return nil, cp, err
	}
	return tr, cp, nil
}

// contextStatus answers GET /api/sessions/{agent}/{id}/context/status
// (engine.Figures: the stored transcript's compact.StatusReport, with the
// context engine's compactions, the size of the last view it sent the
// model, and the layers that can run). The measurement of a transcript
// is cached by its Version: asking again while it did not change costs a
// stat.
func (s *server) contextStatus(r *http.Request) (any, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	cp, err := s.compaction(r.Context())
	if err != nil {
		return nil, err
	}
	rep, err := s.statusCache.Status(r.Context(), s.set.Store, ref, cp.Settings, cp.Tokens)
	if err != nil {
		return nil, err
	}
	return engine.Join(rep, s.engineStatus(r.Context(), ref), cp.Settings, time.Now()), nil
}

// contextInspect answers GET /api/sessions/{agent}/{id}/context/inspect
// (compact.InspectReport).
func (s *server) contextInspect(r *http.Request) (any, error) {
	tr, cp, err := s.openContext(r)
	if err != nil {
		return nil, err
	}
	return compact.Inspect(r.Context(), tr, cp.Settings, cp.Tokens)
}

// contextHistory answers GET /api/sessions/{agent}/{id}/context/history?depth=N
// (compact.HistoryReport, newest first).
func (s *server) contextHistory(r *http.Request) (any, error) {
	depth, err := queryInt(r, "depth", DefaultHistoryDepth, MaxHistoryDepth)
	if err != nil {
		return nil, err
	}
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	tr, err := s.set.Store.Open(r.Context(), ref, nil)
	if err != nil {
		return nil, err
	}
	return compact.History(r.Context(), tr, depth)
}

// compactRequest is the body of POST …/context/compact.
type compactRequest struct {
	// Focus tells the summarizer what to keep.
	Focus string `json:"focus"`
	// Layer forces "prune", "summarize" or "full"; "" lets the
	// thresholds choose.
	Layer string `json:"layer"`
	// DryRun computes the compaction and writes nothing.
	DryRun bool `json:"dry_run"`
}

// contextCompact answers POST /api/sessions/{agent}/{id}/context/compact
// with the compact.Result. A busy session is a 409 with the reason; a
// backend that cannot append (SQLite) a 422.
func (s *server) contextCompact(r *http.Request) (any, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	var req compactRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.Focus) > MaxFocus {
		return nil, fmt.Errorf("request body: focus: expected at most %d bytes, got %d: %w", MaxFocus, len(req.Focus), bs.ErrInvalid)
	}
	layer, err := compact.ParseLayer(req.Layer)
	if err != nil {
		return nil, fmt.Errorf("request body: layer: %w", err)
	}
	cp, err := s.compaction(r.Context())
	if err != nil {
		return nil, err
	}
	// A session the context engine serves: only the prune layer runs on
	// its transcript (engine.CompactLayer).
	if layer, err = engine.CompactLayer(ref, layer, s.engineStatus(r.Context(), ref), time.Now()); err != nil {
		return nil, err
	}
	var sum compact.Summarizer
	if cp.Summarizer != nil {
		sum = cp.Summarizer()
	}
	if sum == nil {
		sum = compactwire.Deterministic()
	}
	res, err := compact.Compact(r.Context(), s.set.Store, ref, compact.Options{Layer: layer, Focus: req.Focus,
		Trigger: compact.TriggerManual, DryRun: req.DryRun, Summarizer: sum, Settings: cp.Settings,
		Tokens: cp.Tokens, Side: s.set.Side, Logger: s.opts.Logger, Restores: s.restoreLog(),
		Policy: extract.Policy{KeepAfterRestore: cp.KeepAfterRestore}})
	if err != nil {
		return nil, err
	}
	if !res.DryRun && res.Layer != compact.LayerNone {
		s.log.Info("compaction through the API", "session", ref.String(), "layer", res.Layer,
			"tokens_before", res.TokensBefore, "tokens_after", res.TokensAfter, "entry", res.EntryID, "remote", r.RemoteAddr)
		if s.set.StateDir != "" {
			ev := audit.Event{Time: time.Now().UTC(), Action: "compact", Session: ref.String(), Entry: res.EntryID,
				Agent: agentName(ref), SessionID: ref.ID, Actor: "api"}
			if err := audit.Append(audit.Path(s.set.StateDir), ev); err != nil {
				s.log.Warn("audit event not written", "action", "compact", "error", err.Error())
			}
		}
	}
	return res, nil
}

// contextGrep answers GET /api/sessions/{agent}/{id}/context/grep?q=&regex=&max=:
// the hits of recall.Grep over the active path, the compacted-away
// entries and the extracted values, sent one at a time as they are found
// ({"agent", "session_id", "pattern", "regex", "max", "hits": [...],
// "count", "truncated", "error"?}); truncated says more hits than max
// exist. An
// error before the first hit is answered with its status; one after it
// ends the hits and is sent in "error".
func (s *server) contextGrep(w http.ResponseWriter, r *http.Request) {
	hits, head, err := s.startGrep(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	next, stop := iter.Pull2(hits)
	defer stop()
	first, ferr, ok := next()
	if ok && ferr != nil {
		s.fail(w, r, ferr)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	hb, _ := json.Marshal(head)
	_, _ = w.Write(hb[:len(hb)-1])
	_, _ = w.Write([]byte(`,"hits":[`))
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	fl, _ := w.(http.Flusher)
	n, truncated := 0, false
	var tailErr error
	for h, err, ok := first, ferr, ok; ok; h, err, ok = next() {
		if err != nil {
			tailErr = err
			break
		}
		if n == head.Max {
			truncated = true // the search asked for one hit more than it sends
			break
		}
		if n > 0 {
			_, _ = w.Write([]byte(","))
		}
		if enc.Encode(h) != nil {
			return // the client is gone
		}
		n++
		if fl != nil && n%16 == 1 {
			fl.Flush()
		}
	}
	tail := map[string]any{"count": n, "truncated": truncated}
	if tailErr != nil {
		tail["error"] = tailErr.Error()
		s.log.Warn("grep ended early", "path", r.URL.Path, "error", tailErr)
	}
	tb, _ := json.Marshal(tail)
	_, _ = w.Write([]byte("],"))
	_, _ = w.Write(tb[1:])
	_, _ = w.Write([]byte("\n"))
}

// grepHead is the start of a grep answer.
type grepHead struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Pattern   string `json:"pattern"`
	Regex     bool   `json:"regex"`
	Max       int    `json:"max"`
}

func (s *server) startGrep(r *http.Request) (iter.Seq2[recall.Hit, error], grepHead, error) {
	q := r.URL.Query()
	pattern := q.Get("q")
	if pattern == "" {
		return nil, grepHead{}, fmt.Errorf("query parameter q: expected the text or regular expression to search for: %w", bs.ErrInvalid)
	}
	if len(pattern) > MaxGrepPattern {
		return nil, grepHead{}, fmt.Errorf("query parameter q: expected at most %d bytes, got %d: %w", MaxGrepPattern, len(pattern), bs.ErrInvalid)
	}
	regex := false
	if v := q.Get("regex"); v != "" {
		var err error
		if regex, err = strconv.ParseBool(v); err != nil {
			return nil, grepHead{}, fmt.Errorf("query parameter regex: expected 1, 0, true or false, got %q: %w", v, bs.ErrInvalid)
		}
	}
	max, err := queryInt(r, "max", DefaultGrepHits, MaxGrepHits)
	if err != nil {
		return nil, grepHead{}, err
	}
	if max == 0 {
		max = DefaultGrepHits
	}
	ref, err := s.findSession(r)
	if err != nil {
		return nil, grepHead{}, err
	}
	tr, err := s.set.Store.Open(r.Context(), ref, nil)
	if err != nil {
		return nil, grepHead{}, err
	}
	head := grepHead{Agent: agentName(ref), SessionID: ref.ID, Pattern: pattern, Regex: regex, Max: max}
	seq := recall.Grep(r.Context(), tr, s.set.Side, pattern, recall.GrepOptions{Regexp: regex, MaxHits: max + 1, Logger: s.opts.Logger})
	return seq, head, nil
}
