// Package hostconfig reads what an OpenClaw host's configuration says
// about its models' context windows. It only reads the host's files, never
// writes them: openclaw.json in the host's state dir (the parent of the
// agents dir; $OPENCLAW_CONFIG_PATH when that has none), which OpenClaw
// parses as JSON5, and each agent's generated model catalog
// agents/<agent>/agent/models.json.
//
// A model's window follows OpenClaw's rule: a model entry's contextTokens
// (the active-input cap, never above its contextWindow), else its
// contextWindow; an entry in openclaw.json wins over the agent's
// models.json; a provider's own contextTokens or contextWindow applies to
// its models without one. agents.defaults.contextTokens (or the agent's
// own contextTokens in agents.list) caps the result, and names the window
// alone when no model entry does.
package hostconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Window is a context window the host's config names.
type Window struct {
	// Tokens is the window in tokens.
	Tokens int
	// From says where it was found ("models.providers.ollama.models[llama3.2:3b].contextWindow
	// in /home/u/.openclaw/openclaw.json").
	From string
}

// Reader reads the host config of one agents dir, again only when a
// file changed (its size or modification time). It is safe for concurrent
// use.
type Reader struct {
	agentsDir string
	mu        sync.Mutex
	files     map[string]cached
}

type cached struct {
	size  int64
	mtime int64
	cfg   *fileJSON
	err   error
}

// New returns a Reader of the host config of root: an OpenClaw agents dir,
// or its state dir (the directory holding agents/ and openclaw.json), as
// backend.Open accepts either.
func New(root string) *Reader {
	agentsDir := root
	if fi, err := os.Stat(filepath.Join(root, "agents")); err == nil && fi.IsDir() {
		agentsDir = filepath.Join(root, "agents")
	}
	return &Reader{agentsDir: agentsDir, files: map[string]cached{}}
}

// ConfigPath returns the host's openclaw.json of the agents dir: the one
// in its parent directory when it exists, else $OPENCLAW_CONFIG_PATH when
// set, else the path in the parent directory (which does not exist).
func (r *Reader) ConfigPath() string {
	p := filepath.Join(filepath.Dir(filepath.Clean(r.agentsDir)), "openclaw.json")
	if _, err := os.Stat(p); err != nil {
		if env := os.Getenv("OPENCLAW_CONFIG_PATH"); env != "" {
			return env
		}
	}
	return p
}

// Window returns the context window the host's config gives the model
// ("provider/model"; "" means the agent's default model from the config)
// of agent. ok is false when the config names none (or there is no
// config); err says why a config that exists could not be read.
func (r *Reader) Window(agent, model string) (w Window, ok bool, err error) {
	cfgPath := r.ConfigPath()
	cfg, err := r.load(cfgPath)
	if err != nil {
		return Window{}, false, err
	}
	var cat *fileJSON
	catPath := ""
	if bs.CheckSegment(agent) == nil {
		catPath = filepath.Join(r.agentsDir, agent, "agent", "models.json")
		if cat, err = r.load(catPath); err != nil {
			return Window{}, false, err
		}
	}
	if model == "" && cfg != nil {
		model = cfg.defaultModel(agent)
	}
	provider, id, _ := strings.Cut(model, "/")
	if id == "" {
		provider, id = "", model
	}
	if id != "" {
		for _, src := range []struct {
			f    *fileJSON
			path string
		}{{cfg, cfgPath}, {cat, catPath}} {
			if src.f == nil {
				continue
			}
			if n, key, found := src.f.modelWindow(provider, id); found {
				w, ok = Window{Tokens: n, From: key + " in " + src.path}, true
				break
			}
		}
	}
	if cfg != nil {
		if n, key := cfg.agentCap(agent); n > 0 && (!ok || n < w.Tokens) {
			w, ok = Window{Tokens: n, From: key + " in " + cfgPath}, true
		}
	}
	return w, ok, nil
}

// load reads and parses one file (nil, nil when it does not exist),
// again only when its size or modification time changed.
func (r *Reader) load(path string) (*fileJSON, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("host config %s: %w", path, err)
	}
	r.mu.Lock()
	c, hit := r.files[path]
	r.mu.Unlock()
	if hit && c.size == fi.Size() && c.mtime == fi.ModTime().UnixNano() {
		return c.cfg, c.err
	}
	c = cached{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	b, err := os.ReadFile(path)
	if err != nil {
		c.err = fmt.Errorf("host config %s: %w", path, err)
	} else {
		c.cfg, c.err = Parse(b)
		if c.err != nil {
			c.err = fmt.Errorf("host config %s: %w", path, c.err)
		}
	}
	r.mu.Lock()
	r.files[path] = c
	r.mu.Unlock()
	return c.cfg, c.err
}

// num is a number of a config; anything else (a string, an object) reads
// as 0, so that one odd value does not hide the rest of the config.
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	if f, err := strconv.ParseFloat(string(b), 64); err == nil {
		*n = num(f)
	}
	return nil
}

// tokens returns n as a positive whole number of tokens, or 0.
func (n num) tokens() int {
	if n <= 0 || n > 1<<40 {
		return 0
	}
	return int(n)
}

// modelRef is agents.*.model: "provider/model" or {"primary": …}.
type modelRef string

func (m *modelRef) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*m = modelRef(s)
		return nil
	}
	var o struct {
		Primary string `json:"primary"`
	}
	if json.Unmarshal(b, &o) == nil {
		*m = modelRef(o.Primary)
	}
	return nil
}

type modelJSON struct {
	ID            string `json:"id"`
	ContextTokens num    `json:"contextTokens"`
	ContextWindow num    `json:"contextWindow"`
}

type providerJSON struct {
	ContextTokens num         `json:"contextTokens"`
	ContextWindow num         `json:"contextWindow"`
	Models        []modelJSON `json:"models"`
}

type agentJSON struct {
	ID            string   `json:"id"`
	ContextTokens num      `json:"contextTokens"`
	Model         modelRef `json:"model"`
}

// fileJSON is the part of openclaw.json (and of an agent's models.json,
// whose providers sit at the top level) that names context windows.
type fileJSON struct {
	Models struct {
		Providers map[string]providerJSON `json:"providers"`
	} `json:"models"`
	Providers map[string]providerJSON `json:"providers"`
	Agents    struct {
		Defaults agentJSON   `json:"defaults"`
		List     []agentJSON `json:"list"`
	} `json:"agents"`
}

// Parse reads a host config file: JSON, or the JSON5 OpenClaw accepts
// (comments, trailing commas, unquoted keys, single-quoted strings).
func Parse(b []byte) (*fileJSON, error) {
	var f fileJSON
	if err := json.Unmarshal(b, &f); err != nil {
		j, cerr := json5ToJSON(b)
		if cerr != nil {
			return nil, fmt.Errorf("expected JSON or JSON5: %v", cerr)
		}
		if err := json.Unmarshal(j, &f); err != nil {
			return nil, fmt.Errorf("expected JSON or JSON5: %v", err)
		}
	}
	return &f, nil
}

// Decode reads a host config file into v: JSON, or the JSON5 OpenClaw
// accepts (comments, trailing commas, unquoted keys, single-quoted
// strings), as Parse does. The error says what was expected.
func Decode(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		j, cerr := json5ToJSON(b)
		if cerr != nil {
			return fmt.Errorf("expected JSON or JSON5: %v", cerr)
		}
		if err := json.Unmarshal(j, v); err != nil {
			return fmt.Errorf("expected JSON or JSON5: %v", err)
		}
	}
	return nil
}

// modelWindow finds the window of provider/id (provider "" matches any
// provider) and names the key it comes from: the model's entry, else the
// provider's own contextTokens or contextWindow when provider is named.
func (f *fileJSON) modelWindow(provider, id string) (int, string, bool) {
	for _, src := range []struct {
		prefix string
		provs  map[string]providerJSON
	}{{"models.providers", f.Models.Providers}, {"providers", f.Providers}} {
		names := make([]string, 0, len(src.provs))
		for name := range src.provs {
			names = append(names, name)
		}
		sort.Strings(names) // the same answer every time when two providers list a model
		for _, name := range names {
			p := src.provs[name]
			if provider != "" && !strings.EqualFold(name, provider) {
				continue
			}
			for _, m := range p.Models {
				if !sameModel(name, m.ID, id) {
					continue
				}
				win, capTok := m.ContextWindow.tokens(), m.ContextTokens.tokens()
				key := fmt.Sprintf("%s.%s.models[%s]", src.prefix, name, m.ID)
				switch {
				case capTok > 0 && (win == 0 || capTok <= win):
					return capTok, key + ".contextTokens", true
				case win > 0:
					return win, key + ".contextWindow", true
				}
			}
			if provider == "" {
				continue
			}
			if n := p.ContextTokens.tokens(); n > 0 {
				return n, fmt.Sprintf("%s.%s.contextTokens", src.prefix, name), true
			}
			if n := p.ContextWindow.tokens(); n > 0 {
				return n, fmt.Sprintf("%s.%s.contextWindow", src.prefix, name), true
			}
		}
	}
	return 0, "", false
}

// sameModel reports whether the catalog id of provider names the model id
// (case-insensitively; a catalog id may carry its provider as a prefix).
func sameModel(provider, catalogID, id string) bool {
	c, want := strings.ToLower(catalogID), strings.ToLower(id)
	if c == want {
		return true
	}
	p := strings.ToLower(provider) + "/"
	return strings.TrimPrefix(c, p) == strings.TrimPrefix(want, p)
}

// agentCap returns the contextTokens cap of agent (its own in
// agents.list, else agents.defaults) and its key, or 0.
func (f *fileJSON) agentCap(agent string) (int, string) {
	for i, a := range f.Agents.List {
		if a.ID != "" && a.ID == agent {
			if n := a.ContextTokens.tokens(); n > 0 {
				return n, fmt.Sprintf("agents.list[%d].contextTokens", i)
			}
		}
	}
	if n := f.Agents.Defaults.ContextTokens.tokens(); n > 0 {
		return n, "agents.defaults.contextTokens"
	}
	return 0, ""
}

// defaultModel returns the model the config gives agent: its own in
// agents.list, else agents.defaults.model.
func (f *fileJSON) defaultModel(agent string) string {
	for _, a := range f.Agents.List {
		if a.ID != "" && a.ID == agent && a.Model != "" {
			return string(a.Model)
		}
	}
	return string(f.Agents.Defaults.Model)
}

// ToJSON returns a host config file as JSON: b itself when it is JSON,
// else the JSON5 OpenClaw accepts rewritten as JSON (see Parse).
func ToJSON(b []byte) ([]byte, error) {
	if json.Valid(b) {
		return b, nil
	}
	j, err := json5ToJSON(b)
	if err == nil && !json.Valid(j) {
		err = errors.New("not JSON5 either")
	}
	if err != nil {
		return nil, fmt.Errorf("expected JSON or JSON5: %v", err)
	}
	return j, nil
}

// json5ToJSON rewrites the JSON5 that config files use into JSON: it drops
// comments and trailing commas, quotes unquoted keys and turns
// single-quoted strings into double-quoted ones.
func json5ToJSON(b []byte) ([]byte, error) {
	var out bytes.Buffer
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"' || c == '\'':
			j := i + 1
			var s strings.Builder
			for ; j < len(b) && b[j] != c; j++ {
				if b[j] == '\\' && j+1 < len(b) {
					if b[j+1] == '\'' {
						s.WriteByte('\'')
					} else {
						s.WriteByte('\\')
						s.WriteByte(b[j+1])
					}
					j++
					continue
				}
				if c == '\'' && b[j] == '"' {
					s.WriteString(`\"`)
					continue
				}
				s.WriteByte(b[j])
			}
			if j >= len(b) {
				return nil, fmt.Errorf("unterminated string at byte %d", i)
			}
			out.WriteByte('"')
			out.WriteString(s.String())
			out.WriteByte('"')
			i = j + 1
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return nil, fmt.Errorf("unterminated comment at byte %d", i)
			}
			i += end + 4
		case c == ',':
			j := i + 1
			for j < len(b) {
				if b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r' {
					j++
				} else if b[j] == '/' && j+1 < len(b) && b[j+1] == '/' {
					for j < len(b) && b[j] != '\n' {
						j++
					}
				} else if b[j] == '/' && j+1 < len(b) && b[j+1] == '*' {
					end := bytes.Index(b[j+2:], []byte("*/"))
					if end < 0 {
						break
					}
					j += end + 4
				} else {
					break
				}
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				i++ // a trailing comma
				continue
			}
			out.WriteByte(c)
			i++
		case c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			j := i
			for j < len(b) && (b[j] == '_' || b[j] == '$' || (b[j]|0x20 >= 'a' && b[j]|0x20 <= 'z') || (b[j] >= '0' && b[j] <= '9')) {
				j++
			}
			word := string(b[i:j])
			k := j
			for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
				k++
			}
			if k < len(b) && b[k] == ':' {
				out.WriteString(strconv.Quote(word))
			} else {
				out.WriteString(word) // true, false, null, Infinity…
			}
			i = j
		default:
			out.WriteByte(c)
			i++
		}
	}
	return out.Bytes(), nil
}
