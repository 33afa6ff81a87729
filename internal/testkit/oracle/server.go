package oracle

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// serverJS is server.mjs, run with `node --input-type=module -e`, so no path to it has to be found at run time.
//
//go:embed server.mjs
var serverJS string

// startTimeout bounds how long node may take to load the pi package and say it is ready.
const startTimeout = 2 * time.Minute

// The oracle process of this test binary: started by the first request, shared by every test (requests are
// serialised by mu, pi runs on one thread anyway), started again when it died or the environment now names
// another node or pi package, and stopped by Close. When the test binary exits without Close, node sees its
// stdin close and exits too.
var (
	mu      sync.Mutex
	current *server
	starts  atomic.Int64 // processes started, for tests
)

// server is one running server.mjs.
type server struct {
	env      env
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	lines    chan []byte   // stdout lines; closed at EOF
	quit     chan struct{} // closed by stop and close: the reader drops further lines
	quitOnce sync.Once
	done     chan struct{} // closed once the process was waited for
	waitErr  error         // valid after done
	stderr   *tailBuffer
	nextID   int64
}

// request is one line to the server.
type request struct {
	ID    int64    `json:"id"`
	Op    string   `json:"op"`
	Files []string `json:"files"`
}

// reply is one line from the server.
type reply struct {
	ID     *int64          `json:"id"`
	Ready  string          `json:"ready"`
	Result json.RawMessage `json:"result"`
	Error  *string         `json:"error"`
}

// call sends one request to the oracle process of this test binary and returns its result. A process that died
// is started again, and a request during which it died is retried once in a fresh process.
func call(ctx context.Context, e *env, op string, files ...string) (json.RawMessage, error) {
	mu.Lock()
	defer mu.Unlock()
	for attempt := 0; ; attempt++ {
		if current != nil && (current.exited() || current.env != *e) {
			current.stop()
			current = nil
		}
		if current == nil {
			s, err := start(ctx, e)
			if err != nil {
				return nil, err
			}
			current = s
		}
		raw, err, died := current.do(ctx, op, files)
		if died {
			current.stop()
			current = nil
			if attempt == 0 && ctx.Err() == nil {
				continue
			}
		}
		return raw, err
	}
}

// Close stops the oracle process of this test binary, if one runs; the next request starts a new one. Calling it
// is optional (the process exits with the test binary); TestMain does.
func Close() error {
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		return nil
	}
	err := current.close()
	current = nil
	return err
}

func start(ctx context.Context, e *env) (*server, error) {
	cmd := exec.Command(e.node, "--input-type=module", "-e", serverJS)
	cmd.Env = append(os.Environ(), "PI_ORACLE_MODULES="+e.modules)
	s := &server{
		env:    *e,
		cmd:    cmd,
		lines:  make(chan []byte),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
		stderr: &tailBuffer{max: 8 << 10},
	}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("oracle: start %s: %w", e.node, err)
	}
	starts.Add(1)
	go s.read(stdout)

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("oracle: starting node: %w", ctx.Err())
		case <-timer.C:
			s.stop()
			return nil, fmt.Errorf("oracle: node did not load %s within %v%s", PiPackage, startTimeout, s.stderrTail())
		case line, ok := <-s.lines:
			if !ok {
				<-s.done
				return nil, fmt.Errorf("oracle: node server.mjs exited on start (%v)%s", s.waitErr, s.stderrTail())
			}
			var r reply
			if json.Unmarshal(line, &r) != nil || r.Ready == "" {
				continue // not ours
			}
			if want := PiPackage + "@" + PiVersion; r.Ready != want {
				s.stop()
				return nil, fmt.Errorf("oracle: node loaded %s, want %s", r.Ready, want)
			}
			return s, nil
		}
	}
}

// read passes stdout lines to s.lines until EOF, then reaps the process. Reading to EOF before Wait is what
// exec requires of a StdoutPipe.
func (s *server) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			select {
			case s.lines <- line:
			case <-s.quit:
			}
		}
		if err != nil {
			break
		}
	}
	close(s.lines)
	s.waitErr = s.cmd.Wait()
	close(s.done)
}

// do sends one request and waits for its reply. died reports that the process is gone (or was killed because ctx
// ended), so the caller must not use s again.
func (s *server) do(ctx context.Context, op string, files []string) (_ json.RawMessage, _ error, died bool) {
	s.nextID++
	id := s.nextID
	what := "pi oracle " + op + " " + strings.Join(files, " ")
	line, err := json.Marshal(request{ID: id, Op: op, Files: files})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err), false
	}
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		return nil, s.deadError(what, err), true
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", what, ctx.Err()), true
		case line, ok := <-s.lines:
			if !ok {
				return nil, s.deadError(what, nil), true
			}
			var r reply
			if json.Unmarshal(line, &r) != nil || r.ID == nil || *r.ID != id {
				continue // not the reply to this request
			}
			if r.Error != nil {
				return nil, fmt.Errorf("%s: %s", what, *r.Error), false
			}
			return r.Result, nil, false
		}
	}
}

func (s *server) deadError(what string, err error) error {
	select {
	case <-s.done:
		if err == nil {
			err = s.waitErr
		}
	case <-time.After(5 * time.Second):
	}
	return fmt.Errorf("%s: node server.mjs died (%v)%s", what, err, s.stderrTail())
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop kills the process without waiting for it.
func (s *server) stop() {
	s.shutQuit()
	_ = s.stdin.Close()
	_ = s.cmd.Process.Kill()
}

func (s *server) shutQuit() { s.quitOnce.Do(func() { close(s.quit) }) }

// close closes stdin, so the server exits on its own, and kills it if it has not after a few seconds.
func (s *server) close() error {
	s.shutQuit()
	_ = s.stdin.Close()
	select {
	case <-s.done:
		if s.waitErr != nil {
			return fmt.Errorf("oracle: node server.mjs: %w%s", s.waitErr, s.stderrTail())
		}
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	return nil
}

func (s *server) stderrTail() string {
	if msg := strings.TrimSpace(s.stderr.String()); msg != "" {
		return "\n" + msg
	}
	return ""
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
