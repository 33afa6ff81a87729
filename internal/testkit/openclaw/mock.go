package openclaw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// MockModel is the model id the mock serves; an agent turn names it as "ollama/" + MockModel.
const MockModel = "llama3.2:3b"

// Mock is ../shared/oracle/mock-ollama.mjs on a free loopback port: Ollama's native API, a log of every request
// body (MOCK_LOG), and a gate file (MOCK_GATE) that holds /api/chat open while it exists.
type Mock struct {
	Port int
	Log  string // the request log (JSONL)
	Gate string // while this file exists, model calls are held open
	proc *Proc
}

// StartMock starts the mock with its files in dir and waits (within ctx) until it answers.
func StartMock(ctx context.Context, e Env, dir string) (*Mock, error) {
	script, err := SharedScript("mock-ollama.mjs")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	m := &Mock{Port: port, Log: filepath.Join(dir, "mock.jsonl"), Gate: filepath.Join(dir, "gate")}
	env := e.Vars("MOCK_PORT="+strconv.Itoa(port), "MOCK_LOG="+m.Log, "MOCK_GATE="+m.Gate, "MOCK_MODEL="+MockModel)
	m.proc, err = e.start("mock-ollama", dir, filepath.Join(dir, "mock.out"), env, e.Node, script)
	if err != nil {
		return nil, err
	}
	if err := waitTCP(ctx, m.proc, port); err != nil {
		m.Stop()
		return nil, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.URL()+"/api/version", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.Stop()
		return nil, fmt.Errorf("mock: %w", err)
	}
	resp.Body.Close()
	return m, nil
}

// URL returns the mock's base URL, http://127.0.0.1:<port>.
func (m *Mock) URL() string { return "http://127.0.0.1:" + strconv.Itoa(m.Port) }

// Stop stops the mock.
func (m *Mock) Stop() error {
	if m == nil {
		return nil
	}
	return m.proc.Stop()
}

// Hold makes model calls wait (creates the gate file).
func (m *Mock) Hold() error { return os.WriteFile(m.Gate, nil, 0o600) }

// Release lets held and later model calls answer (removes the gate file).
func (m *Mock) Release() error {
	if err := os.Remove(m.Gate); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// MockRecord is one line of the mock's log: a request (Method, Path, Body) or a gate event.
type MockRecord struct {
	T      string          `json:"t"`
	Method string          `json:"method,omitempty"`
	Path   string          `json:"path,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
	Event  string          `json:"event,omitempty"` // "gate-hold", "gate-release"
	ID     int             `json:"id,omitempty"`
}

// Records reads the mock's log.
func (m *Mock) Records() ([]MockRecord, error) {
	b, err := os.ReadFile(m.Log)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []MockRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r MockRecord
		if err := json.Unmarshal(line, &r); err != nil {
			// the last line may be half written
			break
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// ChatMessage is one message of a model request (Ollama's chat format).
type ChatMessage struct {
	Role    string          `json:"role"`
	Content string          `json:"content"`
	Raw     json.RawMessage `json:"-"`
}

// Chat is one /api/chat request: the exact messages the model received.
type Chat struct {
	T        string
	Model    string
	Messages []ChatMessage
	Body     json.RawMessage
}

// Chats returns the /api/chat requests in the log, in order.
func (m *Mock) Chats() ([]Chat, error) {
	recs, err := m.Records()
	if err != nil {
		return nil, err
	}
	var out []Chat
	for _, r := range recs {
		if r.Path != "/api/chat" {
			continue
		}
		var body struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			return nil, fmt.Errorf("mock log: chat body: %w", err)
		}
		c := Chat{T: r.T, Model: body.Model, Body: r.Body}
		for _, raw := range body.Messages {
			var cm ChatMessage
			if err := json.Unmarshal(raw, &cm); err != nil {
				// content that is not a string: keep the role and the raw message
				var role struct{ Role string }
				_ = json.Unmarshal(raw, &role)
				cm = ChatMessage{Role: role.Role}
			}
			cm.Raw = raw
			c.Messages = append(c.Messages, cm)
		}
		out = append(out, c)
	}
	return out, nil
}

// Holds returns how many model calls the gate has held so far.
func (m *Mock) Holds() (int, error) {
	recs, err := m.Records()
	n := 0
	for _, r := range recs {
		if r.Event == "gate-hold" {
			n++
		}
	}
	return n, err
}

// WaitHeld waits until the gate has held more than before model calls (a run is in flight, its model call open),
// or ctx is done.
func (m *Mock) WaitHeld(ctx context.Context, before int) error {
	for {
		n, err := m.Holds()
		if err != nil {
			return err
		}
		if n > before {
			return nil
		}
		if done, werr := m.proc.Exited(); done {
			return fmt.Errorf("mock exited: %v", werr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no model call was held (%d so far): %w", n, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
