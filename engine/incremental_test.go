package engine_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// psess is a session of the property test: a JSONL file the test appends
// to as the host would, with branches and compactions.
type psess struct {
	t     *testing.T
	rng   *rand.Rand
	path  string
	n     int
	leaf  string
	ids   []string // every entry id, in order
	at    time.Time
	calls int
	// db, id and seq are the SQLite store's connection, the session's id
	// and the next row's seq (db nil for a JSONL file).
	db  *sql.DB
	id  string
	seq int
}

// newPsess makes an empty session (its header) in a JSONL file, or, with
// kind "sqlite", in an OpenClaw SQLite store, and returns it with its
// store and ref.
func newPsess(t *testing.T, rng *rand.Rand, kind string) (*psess, bs.Store, bs.SessionRef) {
	id := "5e551011-0000-4000-8000-000000000002"
	header := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":"/w"}`, id, bs.FormatTimestamp(epoch))
	if kind == "sqlite" {
		state := t.TempDir()
		path := testcorpus.WriteStore(t, filepath.Join(state, "agents"), "main", testcorpus.StoreSession{ID: id, Rows: []string{header}})
		db, err := sql.Open("sqlite", "file://"+path+"?mode=rw&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		s := &psess{t: t, rng: rng, at: epoch, db: db, id: id, seq: 1}
		return s, sqlite.NewStore(state, sqlite.Options{}), bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: id}
	}
	dir := filepath.Join(t.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &psess{t: t, rng: rng, path: filepath.Join(dir, id+".jsonl"), at: epoch}
	s.write(header)
	store := session.NewStore(filepath.Dir(filepath.Dir(dir)))
	store.Writer.Quiet = 0
	ref, err := store.Resolve(context.Background(), s.path)
	if err != nil {
		t.Fatal(err)
	}
	return s, store, ref
}

func (s *psess) write(lines ...string) {
	if s.db != nil {
		for _, l := range lines {
			if _, err := s.db.Exec(`INSERT INTO transcript_events(session_id, seq, event_json, event_utf8_bytes, created_at) VALUES (?, ?, ?, ?, 1)`,
				s.id, s.seq, l, len(l)); err != nil {
				s.t.Fatal(err)
			}
			s.seq++
		}
		return
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			s.t.Fatal(err)
		}
	}
}

// entry appends an entry of type typ with the given members under parent.
func (s *psess) entry(typ, parent, members string) string {
	s.n++
	id := fmt.Sprintf("%08x", uint32(s.n)*2654435761)
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	s.write(fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":%q,%s}`, typ, id, p, bs.FormatTimestamp(s.at), members))
	s.ids = append(s.ids, id)
	s.leaf = id
	s.at = s.at.Add(time.Second)
	return id
}

func (s *psess) msg(members string) string {
	return s.entry("message", s.leaf, fmt.Sprintf(`"message":{%s,"timestamp":%d}`, members, s.at.UnixMilli()))
}

// turn appends a tool turn of n tool calls (results of random sizes).
func (s *psess) turn() {
	s.calls++
	k := s.calls
	s.msg(fmt.Sprintf(`"role":"user","content":[{"type":"text","text":"step %d"}]`, k))
	for c := range 1 + s.rng.IntN(2) {
		call := fmt.Sprintf("call_%d_%d", k, c)
		s.msg(fmt.Sprintf(`"role":"assistant","content":[{"type":"thinking","thinking":%s},{"type":"toolCall","id":%q,"name":"exec","arguments":{}}],"provider":"anthropic","model":"m","usage":{"input":%d,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":1}`,
			text(100+s.rng.IntN(800), k), call, 1000+300*k))
		s.msg(fmt.Sprintf(`"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":%s}],"isError":false`,
			call, text([]int{50, 400, 900, 3000}[s.rng.IntN(4)], k*7+c)))
	}
	s.msg(fmt.Sprintf(`"role":"assistant","content":[{"type":"text","text":"done %d"}],"provider":"anthropic","model":"m","usage":{"input":%d,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":1}`, k, 1200+300*k))
}

// branch moves the leaf to an earlier entry: the next entry starts a
// branch there.
func (s *psess) branch() {
	if len(s.ids) < 4 {
		return
	}
	s.leaf = s.ids[s.rng.IntN(len(s.ids)-2)]
	s.msg(`"role":"user","content":[{"type":"text","text":"again"}]`)
}

// compaction appends a host compaction that keeps a few of the newest
// entries of the active path.
func (s *psess) compaction(path []string) {
	if len(path) < 6 {
		return
	}
	kept := path[len(path)-2-s.rng.IntN(4)]
	s.entry("compaction", s.leaf, fmt.Sprintf(`"summary":%s,"firstKeptEntryId":%q,"tokensBefore":1000`, text(300, s.n), kept))
}

// host returns the host's messages of the session's active path (the
// history it rebuilds) and the ids of the path's entries.
func (s *psess) host(store bs.Store, ref bs.SessionRef) ([]engine.Message, []string) {
	ctx := context.Background()
	tr, err := store.Open(ctx, ref, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	nodes := tr.Nodes()
	var path []string
	for _, i := range tr.ActivePath() {
		path = append(path, nodes[i].ID)
	}
	c := tr.Context()
	idx := c.Messages
	if c.Compaction >= 0 {
		idx = append([]int{c.Compaction}, idx...)
	}
	byLine := map[int]*bs.Entry{}
	var lines []int
	for _, i := range idx {
		lines = append(lines, nodes[i].Line)
	}
	slices.Sort(lines)
	for en, err := range tr.Lines(ctx, lines) {
		if err != nil {
			s.t.Fatal(err)
		}
		byLine[en.Line] = entry.Parse(en.Raw, en.Line, en.Offset)
	}
	var out []engine.Message
	for _, i := range idx {
		en := byLine[nodes[i].Line]
		if en.Type == "compaction" {
			var j struct {
				Summary json.RawMessage `json:"summary"`
			}
			_ = json.Unmarshal(en.Raw, &j)
			out = append(out, engine.Message{Role: "compactionSummary", Timestamp: en.Timestamp.UnixMilli(), Chars: jsChars(j.Summary)})
			continue
		}
		var j struct {
			Message struct {
				Role       string          `json:"role"`
				Timestamp  int64           `json:"timestamp"`
				ToolCallID string          `json:"toolCallId"`
				Content    json.RawMessage `json:"content"`
			} `json:"message"`
		}
		_ = json.Unmarshal(en.Raw, &j)
		m := engine.Message{Role: j.Message.Role, Timestamp: j.Message.Timestamp, ToolCallID: j.Message.ToolCallID, Chars: jsChars(j.Message.Content)}
		var blocks []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(j.Message.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "toolCall" {
					m.ToolCallIDs = append(m.ToolCallIDs, b.ID)
				}
			}
		}
		out = append(out, m)
	}
	return out, path
}

// echo returns the messages a view v of host makes: what the host hands
// its next model-request call.
func echo(host []engine.Message, v engine.View) []engine.Message {
	if v.Passthrough != "" {
		return append([]engine.Message(nil), host...)
	}
	var out []engine.Message
	if v.Summary != nil {
		q, _ := json.Marshal(v.Summary.Text)
		out = append(out, engine.Message{Role: "compactionSummary", Timestamp: v.Summary.Timestamp, Chars: jsChars(q)})
	}
	repl := map[int][]byte{}
	for _, r := range v.Replace {
		repl[r.Index] = r.Content
	}
	for i := v.FirstKept; i < len(host); i++ {
		m := host[i]
		if r, ok := repl[i]; ok {
			m.Chars = jsChars(r)
		}
		out = append(out, m)
	}
	return out
}

// idSource is a reproducible stream of random bytes.
type idSource struct {
	seed uint64
	n    uint64
}

func (r *idSource) Read(p []byte) (int, error) {
	for i := range p {
		sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d", r.seed, r.n))
		r.n++
		p[i] = sum[0]
	}
	return len(p), nil
}

// comparable returns the JSON of a view without what differs between two
// engines by design (the time taken, the acknowledgement).
func comparable(t *testing.T, v engine.View) string {
	t.Helper()
	v.ElapsedMS, v.Ack = 0, nil
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIncrementalEqualsFull is the property of issue 33: for random
// sessions and random sequences of appends, branches, host compactions,
// restarts of the daemon and lost state files, the view the incremental
// path serves (the session's cache extended by what the store appended,
// the host's list sent as an extension of the last one acknowledged, the
// state held in memory and saved as a journal) equals, byte for byte, the
// view of the full path (the whole session and the state file read on
// every call, the whole list sent), and so do the states they save.
func TestIncrementalEqualsFull(t *testing.T) {
	sessions, steps := 10, 16
	if testing.Short() {
		sessions = 4
	}
	if n, err := strconv.Atoi(os.Getenv("BS_PROPERTY_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	// The usage of older messages is read when a measure needs it.
	defer engine.SetEagerUsage(engine.SetEagerUsage(8))
	var mu sync.Mutex
	stats := map[string]int{}
	ext0, read0 := engine.CacheCounts()
	vis0, whole0 := engine.Layer1Counts()
	t.Run("sessions", func(t *testing.T) {
		for seed := range sessions {
			// One session in three is held in an SQLite store.
			kind := "jsonl"
			if seed%3 == 2 {
				kind = "sqlite"
			}
			t.Run(fmt.Sprint(kind, seed), func(t *testing.T) {
				t.Parallel()
				own := map[string]int{}
				runProperty(t, kind, uint64(seed), steps, own)
				mu.Lock()
				defer mu.Unlock()
				for k, v := range own {
					stats[k] += v
				}
			})
		}
	})
	ext, read := engine.CacheCounts()
	vis, whole := engine.Layer1Counts()
	t.Logf("%d sessions of %d steps: %v; calls served from an extended cache %d, from a whole read %d; layer 1 visited what changed %d times, every message %d times",
		sessions, steps, stats, ext-ext0, read-read0, vis-vis0, whole-whole0)
	if ext-ext0 < int64(stats["calls"])/2 {
		t.Fatalf("only %d of %d calls were served from an extended cache", ext-ext0, stats["calls"])
	}
	if vis-vis0 < int64(stats["calls"])/3 {
		t.Fatalf("layer 1 visited only what changed in %d of %d calls", vis-vis0, stats["calls"])
	}
}

func runProperty(t *testing.T, kind string, seed uint64, steps int, stats map[string]int) {
	rng := rand.New(rand.NewPCG(seed, 33))
	s, store, ref := newPsess(t, rng, kind)
	ctx := context.Background()
	for range 3 {
		s.turn()
	}
	incDir, fullDir := t.TempDir(), t.TempDir()
	for _, d := range []*string{&incDir, &fullDir} {
		if abs, err := filepath.Abs(*d); err == nil {
			*d = abs
		}
	}
	p := testPolicy()
	if rng.IntN(2) == 0 {
		p.MinSavingTokens = 200
	}
	settings := compact.DefaultSettings()
	incIDs, fullIDs := &idSource{seed: seed}, &idSource{seed: seed}
	// The engines' clock moves on between steps, so that restore
	// protections end while the caches hold the session.
	now := clock
	mk := func(dir string, ids io.Reader, full bool) *engine.Engine {
		e := &engine.Engine{Store: store, StateDir: dir, Policy: p, Settings: settings, SummaryWait: time.Minute,
			Now: func() time.Time { return now }}
		e.SetIDSource(ids)
		e.SetFull(full)
		return e
	}
	inc, full := mk(incDir, incIDs, false), mk(fullDir, fullIDs, true)
	acks := map[string]*engine.Ack{}
	sent := map[string][]engine.Message{}
	var last engine.View
	var lastHost []engine.Message
	budget := 3000 + rng.IntN(9000)
	call := func(what, hostCall string, msgs []engine.Message) {
		t.Helper()
		// The reference starts from the state the incremental path saved.
		copyState(t, incDir, fullDir)
		req := engine.Request{Messages: msgs, TokenBudget: budget, PromptChars: 40, HostCall: hostCall, Model: "m"}
		want, err := full.Assemble(ctx, ref, req)
		if err != nil {
			t.Fatalf("seed %d, %s: full: %v", seed, what, err)
		}
		ireq := req
		if a := acks[hostCall]; a != nil && rng.IntN(5) > 0 {
			// The plugin sends what follows the longest prefix it knows
			// the engine holds.
			prev := sent[hostCall]
			n, fp := 0, ""
			for n < len(prev) && n < len(msgs) && n < a.Messages && sameMsg(prev[n], msgs[n]) {
				fp = engine.ChainFingerprint(fp, msgs[n])
				n++
			}
			if n > 0 {
				ireq.Base, ireq.BaseFingerprint, ireq.Messages = n, fp, append([]engine.Message(nil), msgs[n:]...)
				stats["base"]++
			}
		}
		got, err := inc.Assemble(ctx, ref, ireq)
		if errors.Is(err, engine.ErrNeedFull) {
			stats["need_full"]++
			got, err = inc.Assemble(ctx, ref, req)
		}
		if err != nil {
			t.Fatalf("seed %d, %s: incremental: %v", seed, what, err)
		}
		if g, w := comparable(t, got), comparable(t, want); g != w {
			t.Fatalf("seed %d, %s (%s, %d messages): the incremental view differs from the full one:\n got %s\nwant %s", seed, what, hostCall, len(msgs), g, w)
		}
		if g, w := inc.StateJSON(ref), full.StateJSON(ref); g != w {
			t.Fatalf("seed %d, %s: the incremental state differs from the full one:\n got %s\nwant %s", seed, what, g, w)
		}
		if got.Ack == nil || got.Ack.Messages != len(msgs) {
			t.Fatalf("seed %d, %s: ack %+v for %d messages", seed, what, got.Ack, len(msgs))
		}
		acks[hostCall], sent[hostCall] = got.Ack, msgs
		last, lastHost = got, msgs
		stats["calls"]++
		if got.Summary != nil {
			stats["summarized"]++
		}
		if len(got.Replace) > 0 {
			stats["collapsed"]++
		}
		if got.Passthrough != "" {
			stats["passthrough"]++
		}
	}
	for step := range steps {
		now = now.Add(time.Duration(rng.IntN(8)) * time.Minute)
		switch r := rng.IntN(20); {
		case r == 0:
			s.branch()
			stats["branch"]++
		case r == 1:
			_, path := s.host(store, ref)
			s.compaction(path)
			stats["compaction"]++
		case r == 2:
			engine.ResetCaches(incDir, fullDir)
			inc, full = mk(incDir, incIDs, false), mk(fullDir, fullIDs, true)
			acks, sent = map[string]*engine.Ack{}, map[string][]engine.Message{}
			stats["restart"]++
		case r == 3:
			for _, f := range []string{ref.ID + ".json", ref.ID + ".journal"} {
				_ = os.Remove(filepath.Join(incDir, "engine", ref.Agent, f))
			}
			stats["state_lost"]++
		case r == 4:
			s.entry("model_change", s.leaf, `"provider":"anthropic","modelId":"m2"`)
		case r == 5 && len(s.ids) > 0:
			id := s.ids[rng.IntN(len(s.ids))]
			if err := inc.RecordRestore(ctx, ref, id, now.Add(-time.Duration(rng.IntN(20))*time.Minute)); err != nil {
				t.Fatal(err)
			}
			stats["restore"]++
		}
		// A turn as OpenClaw makes it: the prompt stored, the turn-start
		// call with the rebuilt history, model-request calls with the
		// view served and what the turn added.
		prompt := fmt.Sprintf(`"role":"user","content":[{"type":"text","text":"prompt %d"}]`, step)
		var hist []engine.Message
		switch rng.IntN(4) {
		case 0:
			// The host hands the prompt before it is stored: unmatched
			// now, matched by a later call that extends this list.
			hist, _ = s.host(store, ref)
			q := fmt.Sprintf(`[{"type":"text","text":"prompt %d"}]`, step)
			hist = append(hist, engine.Message{Role: "user", Timestamp: s.at.UnixMilli(), Chars: jsChars([]byte(q))})
			call(fmt.Sprintf("step %d turn start, prompt not stored", step), engine.CallTurnStart, hist)
			s.msg(prompt)
			stats["prompt_ahead"]++
		case 1:
			// A message the session does not hold, amid the history.
			s.msg(prompt)
			hist, _ = s.host(store, ref)
			i := rng.IntN(len(hist) + 1)
			odd := engine.Message{Role: "user", Timestamp: 1, Chars: 10}
			hist = append(hist[:i], append([]engine.Message{odd}, hist[i:]...)...)
			call(fmt.Sprintf("step %d turn start, a message not stored at %d", step, i), engine.CallTurnStart, hist)
			stats["odd_message"]++
		default:
			s.msg(prompt)
			hist, _ = s.host(store, ref)
			call(fmt.Sprintf("step %d turn start", step), engine.CallTurnStart, hist)
		}
		mr := echo(lastHost, last)
		if rng.IntN(3) == 0 {
			// The host prunes old tool results.
			for i := range mr[:max(len(mr)-6, 0)] {
				if mr[i].Role == "toolResult" && mr[i].Chars > 300 {
					mr[i].Chars = 300
				}
			}
		}
		call(fmt.Sprintf("step %d model request", step), engine.CallModelRequest, mr)
		before, _ := s.host(store, ref)
		s.turn()
		after, _ := s.host(store, ref)
		if len(after) > len(before) {
			mr = append(append([]engine.Message(nil), mr...), after[len(before):]...)
		}
		call(fmt.Sprintf("step %d model request after the tools", step), engine.CallModelRequest, mr)
		if rng.IntN(4) == 0 {
			call(fmt.Sprintf("step %d unnamed", step), "", after)
		}
	}
}

func sameMsg(a, b engine.Message) bool {
	return a.Role == b.Role && a.Timestamp == b.Timestamp && a.ToolCallID == b.ToolCallID && a.Chars == b.Chars &&
		strings.Join(a.ToolCallIDs, "\x01") == strings.Join(b.ToolCallIDs, "\x01")
}

// copyState makes the engine state of dst a copy of src's.
func copyState(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dst, "engine")); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(filepath.Join(src, "engine"), func(p string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
