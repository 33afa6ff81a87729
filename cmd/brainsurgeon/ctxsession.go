package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// defaultAgent is the agent whose newest session --session defaults to.
const defaultAgent = "main"

// sessionFlags are the flags of the commands that work on one session:
// --agents-dir, --session and --json.
type sessionFlags struct {
	agentsDir string
	session   string
	json      bool
}

func (f *sessionFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.agentsDir, "agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	fs.StringVar(&f.session, "session", "", "the session: agent/sessionId, a session id, a session key or a transcript path (default: the most recently modified session of agent main)")
	fs.BoolVar(&f.json, "json", false, "print the result as JSON")
}

// checkAgentsDir checks that --agents-dir exists, or, when it does not,
// that --session names a transcript by path, which brings its own agents
// dir (<agents>/<agent>/sessions/<id>.jsonl): that one is used instead.
func (f *sessionFlags) checkAgentsDir() error {
	if _, err := os.Stat(f.agentsDir); err != nil {
		if dir, ok := agentsDirOf(f.session); ok {
			f.agentsDir = dir
		}
	}
	return backend.CheckAgentsDir(f.agentsDir)
}

// target is an opened installation and the session a command works on.
type target struct {
	cfg  config.Config
	info config.FileInfo
	set  *backend.Set
	ref  bs.SessionRef
	// chosen is true when --session was omitted and the newest session of
	// agent main was picked.
	chosen bool
}

// openTarget loads the config beside the agents dir (leniently: reading a
// session must not depend on a perfect config), opens the installation and
// resolves --session, or picks the most recently modified session of
// agent main and says so on stderr.
func (m *Main) openTarget(ctx context.Context, f *sessionFlags) (*target, error) {
	if err := f.checkAgentsDir(); err != nil {
		return nil, err
	}
	cfg, info, err := m.loadConfig(ctx, f.agentsDir, true)
	if err != nil {
		return nil, err
	}
	set, err := m.open(ctx, f.agentsDir, cfg)
	if err != nil {
		return nil, err
	}
	t := &target{cfg: cfg, info: info, set: set}
	if strings.TrimSpace(f.session) != "" {
		if t.ref, err = resolveRef(ctx, set, f.session); err != nil {
			return nil, err
		}
		return t, nil
	}
	ref, mod, err := newestSession(ctx, set.Store, defaultAgent, m.logger())
	if err != nil {
		return nil, err
	}
	t.ref, t.chosen = ref, true
	when := ""
	if !mod.IsZero() {
		when = ", modified " + ago(time.Now(), mod)
	}
	fmt.Fprintf(m.Stderr, "session: %s (the most recently modified session of agent %s%s; choose another with --session)\n", ref, defaultAgent, when)
	return t, nil
}

// openTranscript is openTarget, then the chosen session read through the
// installation's store.
func (m *Main) openTranscript(ctx context.Context, f *sessionFlags) (*target, bs.Transcript, error) {
	t, err := m.openTarget(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	tr, err := t.set.Store.Open(ctx, t.ref, nil)
	if err != nil {
		return nil, nil, err
	}
	return t, tr, nil
}

// newestSession returns the most recently modified session of agent and
// its modification time.
func newestSession(ctx context.Context, st bs.Store, agent string, log bs.Logger) (bs.SessionRef, time.Time, error) {
	refs, agents, total, err := cli.AgentSessions(ctx, st, agent, log)
	if err != nil {
		return bs.SessionRef{}, time.Time{}, err
	}
	if len(refs) == 0 {
		names := make([]string, len(agents))
		for i, a := range agents {
			if a == "" {
				a = `"" (pi sessions)`
			}
			names[i] = a
		}
		return bs.SessionRef{}, time.Time{}, fmt.Errorf("no --session given and agent %q has no sessions to default to (found %s of agents: %s); name one with --session: %w",
			agent, plural.Count(total, "session", "sessions"), cli.JoinMax(names, 10), bs.ErrNotFound)
	}
	mods := make([]time.Time, len(refs))
	for i, r := range bs.StatMany(ctx, st, refs) {
		if r.Err == nil {
			mods[i] = r.Stat.ModTime
		}
	}
	best := 0
	for i := range refs {
		if mods[i].After(mods[best]) || (mods[i].Equal(mods[best]) && refs[i].ID > refs[best].ID) {
			best = i
		}
	}
	return refs[best], mods[best], nil
}

// tokenizerNames are the values --tokenizer accepts.
var tokenizerNames = []string{tokens.NameCalibrated, tokens.NameO200k, tokens.NameCharsPer4}

// tokenOptions returns how tokens are counted for name ("" means the
// config's compaction.tokenizer, then calibrated), as the API and the
// daemon count them (internal/compactwire), with the context window of
// each session's model from the host's config beside agentsDir (read
// only; a config that cannot be read is reported on log).
func tokenOptions(name string, cfg config.Config, agentsDir string, log bs.Logger) (compact.TokenOptions, error) {
	if name == "" {
		name = cfg.Compaction.Tokenizer
	}
	tok, err := compactwire.TokenOptions(name)
	if err != nil {
		return tok, err
	}
	tok.Window = compactwire.HostWindow(agentsDir, log)
	return tok, nil
}

// checkTokenizer validates a --tokenizer value before any work is done.
func checkTokenizer(name, try string) error {
	if name == "" {
		return nil
	}
	for _, n := range tokenizerNames {
		if n == name {
			return nil
		}
	}
	return &cli.UsageError{Msg: fmt.Sprintf("--tokenizer %q: expected one of %s", name, strings.Join(tokenizerNames, ", ")), Try: try}
}

// isTerminalReader reports whether r is a terminal.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// /dev/null is a character device too, and no one to ask.
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(st, null) {
		return false
	}
	return true
}

// ago says how long before now t was, for people: "just now",
// "5 minutes ago", "2 hours ago", "3 days ago", "4 months ago".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		return "in the future (" + t.UTC().Format("2006-01-02 15:04Z") + ")"
	}
	unit := func(n int, word string) string {
		if n == 1 {
			return "1 " + word + " ago"
		}
		return strconv.Itoa(n) + " " + word + "s ago"
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return unit(int(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return unit(int(d/time.Hour), "hour")
	case d < 60*24*time.Hour:
		return unit(int(d/(24*time.Hour)), "day")
	case d < 730*24*time.Hour:
		return unit(int(d/(30*24*time.Hour)), "month")
	}
	return unit(int(d/(365*24*time.Hour)), "year")
}

// rule is the line under a report's title.
const rule = "────────────────────────────────────────"

// agentsDirOf returns the agents dir that holds the transcript file name,
// when name is one in an OpenClaw layout (<agents>/<agent>/sessions/<file>).
func agentsDirOf(name string) (string, bool) {
	if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", false
	}
	sessions := filepath.Dir(abs)
	if filepath.Base(sessions) != "sessions" {
		return "", false
	}
	return filepath.Dir(filepath.Dir(sessions)), true
}
