package openclaw

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
)

//go:embed gatewaycall.mjs
var gatewayCallJS []byte

// Client is one long-lived Node process beside a gateway that sends gateway calls with OpenClaw's own gateway
// client (the release's callGateway, which `openclaw agent` and `openclaw gateway call` run after their start-up),
// so that a test with many turns does not pay the CLI's start-up for each (2 to 4 s of CPU on a 2-core machine).
// What reaches the gateway is what the CLI sends: the same method, parameters and client identity. Start it with
// [Gateway.Client]; [Gateway.Stop] stops it.
type Client struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   string
	done  chan struct{}

	mu      sync.Mutex
	next    int
	waiting map[int]chan clientAnswer
	err     error // why the process ended
}

type clientAnswer struct {
	ID     *int            `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
	Ready  *bool           `json:"ready"`
	Module string          `json:"module"`
}

// Client returns the gateway's client process, starting it on first use (within ctx).
func (g *Gateway) Client(ctx context.Context) (*Client, error) {
	g.clientMu.Lock()
	defer g.clientMu.Unlock()
	if g.client != nil {
		select {
		case <-g.client.done:
			g.client = nil // ended (killed with a cancelled call): start another
		default:
			return g.client, nil
		}
	}
	c, err := startClient(ctx, g)
	if err != nil {
		return nil, err
	}
	g.client = c
	return c, nil
}

func startClient(ctx context.Context, g *Gateway) (*Client, error) {
	script := filepath.Join(g.State.Dir, "gatewaycall.mjs")
	if err := os.WriteFile(script, gatewayCallJS, 0o600); err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c := &Client{log: filepath.Join(g.State.Dir, "gatewaycall.log"), done: make(chan struct{}), waiting: map[int]chan clientAnswer{}}
	lf, err := os.OpenFile(c.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	c.cmd = exec.Command(g.Install.Node, script, g.Install.Package)
	c.cmd.Dir = g.State.Dir
	c.cmd.Env = g.State.Vars(g.Env, "OPENCLAW_GATEWAY_PORT="+strconv.Itoa(g.Port), "OPENCLAW_GATEWAY_TOKEN="+g.Token)
	c.cmd.Stdout, c.cmd.Stderr = lf, lf
	c.cmd.ExtraFiles = []*os.File{pw} // fd 3: the answers
	c.cmd.SysProcAttr = groupAttr()
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		pr.Close()
		pw.Close()
		lf.Close()
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		lf.Close()
		return nil, fmt.Errorf("start the gateway client: %w", err)
	}
	pw.Close()
	ready := make(chan clientAnswer, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 1<<16), 256<<20)
		first := true
		for sc.Scan() {
			var a clientAnswer
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				continue
			}
			if first {
				first = false
				ready <- a
				continue
			}
			if a.ID == nil {
				continue
			}
			c.mu.Lock()
			ch := c.waiting[*a.ID]
			delete(c.waiting, *a.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- a
			}
		}
		werr := c.cmd.Wait()
		lf.Close()
		pr.Close()
		c.mu.Lock()
		c.err = fmt.Errorf("the gateway client exited (%v); its log: %s", werr, tailFile(c.log, 2000))
		for id, ch := range c.waiting {
			ch <- clientAnswer{Error: c.err.Error()}
			delete(c.waiting, id)
		}
		c.mu.Unlock()
		close(ready)
		close(c.done)
	}()
	select {
	case a, ok := <-ready:
		if !ok || a.Ready == nil || !*a.Ready {
			c.Stop()
			return nil, fmt.Errorf("the gateway client did not start: %s (log: %s)", a.Error, tailFile(c.log, 2000))
		}
		return c, nil
	case <-ctx.Done():
		c.Stop()
		return nil, fmt.Errorf("the gateway client did not start: %w", ctx.Err())
	}
}

func tailFile(p string, n int) string {
	b, _ := os.ReadFile(p)
	return tail(b, n)
}

// Stop ends the client process (its process group) and waits for it; calls in flight fail. It is safe to call
// twice.
func (c *Client) Stop() {
	if c == nil {
		return
	}
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		_ = killGroup(c.cmd, syscall.SIGKILL)
		<-c.done
	}
	_ = killGroup(c.cmd, syscall.SIGKILL)
}

// clientCall is one request to the client process; its fields are those of callGateway's options.
type clientCall struct {
	ID          int      `json:"id"`
	Method      string   `json:"method"`
	Params      any      `json:"params,omitempty"`
	ExpectFinal bool     `json:"expectFinal,omitempty"`
	TimeoutMs   int      `json:"timeoutMs,omitempty"`
	ClientName  string   `json:"clientName,omitempty"`
	Mode        string   `json:"mode,omitempty"`
	Scopes      []string `json:"scopes,omitempty"`
}

// call sends one request and waits for its answer or ctx. When ctx ends first, the process is stopped (a call in
// flight cannot be taken back); the next [Gateway.Client] starts another.
func (c *Client) call(ctx context.Context, req clientCall) (json.RawMessage, error) {
	ch := make(chan clientAnswer, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.next++
	req.ID = c.next
	c.waiting[req.ID] = ch
	line, err := json.Marshal(req)
	if err == nil {
		_, err = c.stdin.Write(append(line, '\n'))
	}
	if err != nil {
		delete(c.waiting, req.ID)
		c.mu.Unlock()
		return nil, fmt.Errorf("send %s to the gateway client: %w", req.Method, err)
	}
	c.mu.Unlock()
	select {
	case a := <-ch:
		if !a.OK {
			return nil, fmt.Errorf("gateway call %s: %s", req.Method, a.Error)
		}
		return a.Result, nil
	case <-ctx.Done():
		c.Stop()
		return nil, fmt.Errorf("gateway call %s: %w", req.Method, ctx.Err())
	}
}

// The client identity `openclaw agent` uses when it names a model (as [Gateway.Agent] does): the gateway client in
// backend mode with the admin scope.
const (
	clientName  = "gateway-client"
	clientMode  = "backend"
	clientScope = "operator.admin"
)

// ErrRunNotOK says an agent run ended with a status other than ok.
var ErrRunNotOK = errors.New("the agent run did not end ok")

// AgentCall runs t as [Gateway.Agent] does, through the gateway's [Client] instead of a CLI process: the gateway's
// agent method with the parameters `openclaw agent --session-key K --model M --message T [--timeout S] --json`
// sends (the CLI's default timeout of 600 s), waiting for the run's final answer. The result's Stdout is that
// answer's JSON, what the CLI prints with --json; a run whose status is not ok (or completed) is an error wrapping
// [ErrRunNotOK], as the CLI exits 1.
func (g *Gateway) AgentCall(ctx context.Context, t Turn) (*Result, error) {
	start := time.Now()
	c, err := g.Client(ctx)
	if err != nil {
		return nil, err
	}
	timeout := 600
	if t.Timeout > 0 {
		timeout = t.Timeout
	}
	params := map[string]any{
		"message": t.Message, "sessionKey": t.Key, "model": "ollama/" + MockModel, "deliver": false,
		"timeout": timeout, "idempotencyKey": uuid.NewString(),
	}
	if g.Install.Version == V7 {
		params["cleanupBundleMcpOnRunEnd"] = true // 2026.7's CLI sends it
	}
	raw, err := c.call(ctx, clientCall{Method: "agent", Params: params, ExpectFinal: true,
		TimeoutMs: (timeout + 30) * 1000, ClientName: clientName, Mode: clientMode, Scopes: []string{clientScope}})
	r := &Result{Args: []string{"gateway client", "agent", "--session-key", t.Key, "--message", t.Message},
		Stdout: raw, Duration: time.Since(start)}
	if err != nil {
		r.ExitCode = 1
		r.Stderr = []byte(err.Error())
		return r, err
	}
	var ans struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(raw, &ans)
	if ans.Status != "" && ans.Status != "ok" && ans.Status != "completed" {
		r.ExitCode = 1
		return r, fmt.Errorf("%w: status %q: %s", ErrRunNotOK, ans.Status, tail(raw, 1000))
	}
	return r, nil
}

// Call sends one gateway RPC through the gateway's [Client], as `openclaw gateway call METHOD --params P --json` does
// (the CLI's client identity), and returns its answer's JSON.
func (g *Gateway) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c, err := g.Client(ctx)
	if err != nil {
		return nil, err
	}
	if params == nil {
		params = map[string]any{}
	}
	return c.call(ctx, clientCall{Method: method, Params: params, TimeoutMs: 60_000, ClientName: "cli", Mode: "cli"})
}
