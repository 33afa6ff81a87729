// Package s3test runs a real S3 server for tests: versitygw serving a
// temporary directory on loopback. BRAINSURGEON_VERSITYGW names the
// binary (.ci/run builds it from the module proxy). Without it a test
// skips, or fails where the environment requires every real part (CI set,
// or BRAINSURGEON_REQUIRE_ORACLE=1 or BRAINSURGEON_REQUIRE_S3=1).
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// Bucket is the bucket every Server creates.
const Bucket = "bs-test"

// Server is a versitygw process serving a directory on a loopback port.
type Server struct {
	// Endpoint is the server's URL: http://127.0.0.1:<port>.
	Endpoint string
	// Access and Secret are the root user's credentials.
	Access, Secret string

	bin, dir, addr string
	mu             sync.Mutex
	cmd            *exec.Cmd
}

// Binary returns the versitygw binary, or skips (or fails, when required)
// tb.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("BRAINSURGEON_VERSITYGW")
	if bin == "" {
		if required() {
			tb.Fatalf("an S3 server is required (CI=%q, BRAINSURGEON_REQUIRE_ORACLE=%q, BRAINSURGEON_REQUIRE_S3=%q) but BRAINSURGEON_VERSITYGW is not set: build it with `GOBIN=$HOME/.cache/bs-versitygw/v1.8.0 go install github.com/versity/versitygw/cmd/versitygw@v1.8.0`",
				os.Getenv("CI"), os.Getenv("BRAINSURGEON_REQUIRE_ORACLE"), os.Getenv("BRAINSURGEON_REQUIRE_S3"))
		}
		tb.Skip("no S3 server: set BRAINSURGEON_VERSITYGW to a versitygw binary (see .ci/run, step b5)")
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("BRAINSURGEON_VERSITYGW=%s: %v", bin, err)
	}
	return bin
}

func required() bool {
	return oracle.Required() || os.Getenv("BRAINSURGEON_REQUIRE_S3") == "1"
}

// Optional starts a server as Start does and sets the AWS_* environment
// of tb to its credentials, for a test whose other cases run without
// one: when no server can run and none is required it returns nil (the
// S3 cases then skip themselves with SkipWithout).
func Optional(tb testing.TB) *Server {
	tb.Helper()
	if os.Getenv("BRAINSURGEON_VERSITYGW") == "" && !required() {
		return nil
	}
	s := Start(tb)
	s.Env(tb)
	return s
}

// SkipWithout skips tb when s is nil (Optional found no server).
func SkipWithout(tb testing.TB, s *Server) {
	tb.Helper()
	if s == nil {
		tb.Skip("no S3 server: set BRAINSURGEON_VERSITYGW to a versitygw binary (see .ci/run)")
	}
}

// Start starts a server with an empty bucket Bucket, stopped when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary(tb)
	dir := tb.TempDir()
	for _, d := range []string{"data", "meta", "iam"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var b [16]byte
	_, _ = rand.Read(b[:])
	s := &Server{Endpoint: "http://" + addr, Access: "bs-test", Secret: hex.EncodeToString(b[:]), bin: bin, dir: dir, addr: addr}
	tb.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
	if err := s.Client().MakeBucket(context.Background(), Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		tb.Fatalf("make bucket: %v", err)
	}
	return s
}

// start runs the process and waits for its health check (15 s at most).
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, "--port", s.addr, "--iam-dir", filepath.Join(s.dir, "iam"), "--health", "/health", "--quiet",
		"posix", "--sidecar", filepath.Join(s.dir, "meta"), filepath.Join(s.dir, "data"))
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.Access, "ROOT_SECRET_KEY="+s.Secret)
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start versitygw: %w", err)
	}
	logf.Close()
	s.cmd = cmd
	go cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.Endpoint + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return fmt.Errorf("versitygw at %s not healthy after 15 s; its log:\n%s", s.addr, log)
}

// Stop kills the server (SIGKILL: as a crash would); its data stays.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		for i := 0; i < 100; i++ { // wait for the port to close
			c, err := net.DialTimeout("tcp", s.addr, 50*time.Millisecond)
			if err != nil {
				break
			}
			c.Close()
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and data, stopping it
// first when it runs.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		tb.Fatal(err)
	}
}

// Client returns a client of the server with the root credentials.
func (s *Server) Client() *minio.Client {
	u, _ := url.Parse(s.Endpoint)
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(s.Access, s.Secret, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		panic(err) // a constant, valid endpoint
	}
	return c
}

// Env sets the AWS_* environment of tb to the root credentials, and
// points the shared credentials file at nothing.
func (s *Server) Env(tb testing.TB) {
	tb.Setenv("AWS_ACCESS_KEY_ID", s.Access)
	tb.Setenv("AWS_SECRET_ACCESS_KEY", s.Secret)
	tb.Setenv("AWS_SESSION_TOKEN", "")
	tb.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(s.dir, "no-credentials"))
}

// URL returns a side_store setting for the server's bucket under prefix,
// with extra parameters appended (such as "timeout=1s").
func (s *Server) URL(prefix string, extra ...string) string {
	q := []string{"endpoint=" + s.Endpoint, "region=us-east-1", "host=test"}
	return "s3://" + Bucket + "/" + strings.Trim(prefix, "/") + "?" + strings.Join(append(q, extra...), "&")
}

// Keys returns every key of the bucket under prefix, sorted.
func (s *Server) Keys(tb testing.TB, prefix string) []string {
	tb.Helper()
	var keys []string
	for o := range s.Client().ListObjects(context.Background(), Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			tb.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// Counter is an http.RoundTripper that counts requests by method and the
// bytes sent and received.
type Counter struct {
	// Next carries the requests; nil means http.DefaultTransport.
	Next http.RoundTripper

	mu                sync.Mutex
	Requests          map[string]int
	BytesOut, BytesIn int64
	Ranges            []string
}

// RoundTrip counts req and its response.
func (c *Counter) RoundTrip(req *http.Request) (*http.Response, error) {
	next := c.Next
	if next == nil {
		next = http.DefaultTransport
	}
	c.mu.Lock()
	if c.Requests == nil {
		c.Requests = map[string]int{}
	}
	op := req.Method
	if req.Method == http.MethodGet && req.URL.Query().Has("list-type") || req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/") {
		op = "LIST"
	}
	c.Requests[op]++
	if req.ContentLength > 0 {
		c.BytesOut += req.ContentLength
	}
	if r := req.Header.Get("Range"); r != "" {
		c.Ranges = append(c.Ranges, r)
	}
	c.mu.Unlock()
	resp, err := next.RoundTrip(req)
	if err == nil && resp.ContentLength > 0 {
		c.mu.Lock()
		c.BytesIn += resp.ContentLength
		c.mu.Unlock()
	}
	return resp, err
}

// Reset zeroes the counts.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Requests, c.BytesOut, c.BytesIn, c.Ranges = map[string]int{}, 0, 0, nil
}

// Snapshot returns a copy of the request counts.
func (c *Counter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.Requests))
	for k, v := range c.Requests {
		out[k] = v
	}
	return out
}

// AddUser creates a user with the role "user", who owns no bucket: every
// request of theirs on Bucket is denied.
func (s *Server) AddUser(tb testing.TB, access, secret string) {
	tb.Helper()
	out, err := exec.Command(s.bin, "admin", "-a", s.Access, "-s", s.Secret, "-er", s.Endpoint,
		"create-user", "-a", access, "-s", secret, "-r", "user").CombinedOutput()
	if err != nil {
		tb.Fatalf("versitygw admin create-user: %v\n%s", err, out)
	}
}

// SlowProxy is a TCP proxy on loopback in front of a server that holds
// every new connection for a delay before passing its bytes on.
type SlowProxy struct {
	// Addr is the proxy's host:port.
	Addr  string
	delay atomic.Int64
	ln    net.Listener
}

// SetDelay sets how long each new connection waits (0: none).
func (p *SlowProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Slow starts a SlowProxy in front of s, closed when tb ends.
func (s *Server) Slow(tb testing.TB, delay time.Duration) *SlowProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &SlowProxy{Addr: ln.Addr().String(), ln: ln}
	p.SetDelay(delay)
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				time.Sleep(time.Duration(p.delay.Load()))
				up, err := net.Dial("tcp", s.addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return p
}

// Prefix returns a key prefix of tb's own: its name, lower-cased, every
// character other than [a-z0-9.] a '-'.
func Prefix(tb testing.TB) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' {
			return r
		}
		return '-'
	}, strings.ToLower(tb.Name()))
}
