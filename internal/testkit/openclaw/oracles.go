package openclaw

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Import runs OpenClaw's own JSONL → SQLite importer (in must be the SQLite era, V9) on the state dir st: `doctor
// --session-sqlite import --session-sqlite-all-agents --json` with HOME=<st>/home and OPENCLAW_STATE_DIR=<st>, as
// ../shared/oracle/make-openclaw-sqlite-store.sh does. It needs no gateway, model or key, and returns the
// importer's JSON report. The sessions must be regular files with one link (the importer refuses hard links).
func Import(ctx context.Context, e Env, in Install, st *State) (json.RawMessage, error) {
	r, err := e.run(ctx, st.Dir, st.Vars(e), in.Node, in.Entry(), "doctor", "--session-sqlite", "import",
		"--session-sqlite-all-agents", "--json")
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := r.DecodeJSON(&raw); err != nil {
		return nil, fmt.Errorf("importer report: %w: %s", err, tail(r.Stdout, 500))
	}
	return raw, nil
}

// ContextMessage is one context message as the SQLite-era oracle lists it.
type ContextMessage struct {
	I     int    `json:"i"`
	Role  string `json:"role"`
	Sha   string `json:"sha"`
	Bytes int    `json:"bytes"`
}

// SQLiteContext is the output of ../shared/oracle/openclaw-sqlite-context-oracle.mjs: what OpenClaw's own
// SessionManager builds from a SQLite store.
type SQLiteContext struct {
	Oracle      string           `json:"oracle"`
	EntryCount  int              `json:"entryCount"`
	LeafID      *string          `json:"leafId"`
	ContextSha  string           `json:"contextSha"`
	Messages    []ContextMessage `json:"messages"`
	ModelView   json.RawMessage  `json:"modelView,omitempty"`
	Target      json.RawMessage  `json:"target"`
	Raw         json.RawMessage  `json:"-"`
	CopyOfState string           `json:"-"` // the copy it ran on (removed when it returns)
}

// ContextOracle runs openclaw-sqlite-context-oracle.mjs for agent/sessionKey (sessionID may be "": the store's
// current one) on a private COPY of the state dir st (opening takes an agent-DB lease and may rebuild
// projections, so the original is never touched; no gateway may be running on the copy). in must be V9.
func ContextOracle(ctx context.Context, e Env, in Install, st *State, agent, sessionKey, sessionID string) (*SQLiteContext, error) {
	script, err := SharedScript("openclaw-sqlite-context-oracle.mjs")
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "bs-oc-oracle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cp := &State{Dir: filepath.Join(tmp, "state")}
	if err := CopyTree(st.Dir, cp.Dir); err != nil {
		return nil, fmt.Errorf("copy state dir: %w", err)
	}
	args := []string{script, agent, sessionKey}
	if sessionID != "" {
		args = append(args, sessionID)
	}
	r, err := e.run(ctx, cp.Dir, cp.Vars(e, "OC_PKG="+in.Package), in.Node, args...)
	if err != nil {
		return nil, err
	}
	var out SQLiteContext
	if err := r.DecodeJSON(&out); err != nil {
		return nil, fmt.Errorf("context oracle: %w: %s", err, tail(r.Stdout, 500))
	}
	out.Raw = jsonPart(r.Stdout)
	out.CopyOfState = cp.Dir
	return &out, nil
}
