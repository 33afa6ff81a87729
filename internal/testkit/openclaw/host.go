package openclaw

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Require locates the install of version or fails the test with the install hint. End-to-end tests are opt-in
// (build tag e2e), so a missing install is a failure, not a skip.
func Require(tb testing.TB, version string) Install {
	tb.Helper()
	in, err := Locate(version)
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// Host is a mock model and a real gateway for one test, in a private state dir under tb.TempDir(). Everything is
// stopped at cleanup, and a process left over fails the test.
type Host struct {
	Env     Env
	Install Install
	State   *State
	Mock    *Mock
	Gateway *Gateway
}

// StartupTimeout bounds the start of the mock and of the gateway (a 2026.7.35 gateway took 33-75 s to be ready
// on a shared 2-core machine).
const StartupTimeout = 4 * time.Minute

// NewHost starts the mock, creates the state dir (config pointing at the mock), calls seed to put sessions in
// place, then starts a gateway of version on it.
func NewHost(tb testing.TB, version string, seed func(st *State) error) *Host {
	return newHost(tb, version, "", seed)
}

// NewHostWithModel is [NewHost] with the model served at modelURL (a [Model]) instead of a mock it starts.
func NewHostWithModel(tb testing.TB, version, modelURL string, seed func(st *State) error) *Host {
	tb.Helper()
	if modelURL == "" {
		tb.Fatal("openclaw: NewHostWithModel needs a model URL")
	}
	return newHost(tb, version, modelURL, seed)
}

func newHost(tb testing.TB, version, modelURL string, seed func(st *State) error) *Host {
	tb.Helper()
	in := Require(tb, version)
	h := &Host{Env: NewEnv(in.Node), Install: in}
	dir := tb.TempDir()
	// registered after TempDir, so it runs before the directory is removed
	tb.Cleanup(func() { h.Close(tb) })
	ctx, cancel := context.WithTimeout(context.Background(), StartupTimeout)
	defer cancel()
	var err error
	if modelURL == "" {
		if h.Mock, err = StartMock(ctx, h.Env, dir); err != nil {
			tb.Fatal(err)
		}
		modelURL = h.Mock.URL()
	}
	opts := ConfigOptions{MockURL: modelURL}
	if version == V9 {
		// 2026.8+ runs heartbeat turns on its own unless told not to; a test counts only its own turns.
		opts.Heartbeat = "0m"
	}
	if h.State, err = NewState(filepath.Join(dir, "state"), opts); err != nil {
		tb.Fatal(err)
	}
	if seed != nil {
		if err := seed(h.State); err != nil {
			tb.Fatal(err)
		}
	}
	start := time.Now()
	if h.Gateway, err = StartGateway(ctx, h.Env, in, h.State); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("openclaw@%s gateway ready on 127.0.0.1:%d after %s (pid %d); model on %s",
		in.Version, h.Gateway.Port, time.Since(start).Round(100*time.Millisecond), h.Gateway.PID(), modelURL)
	return h
}

// Close releases the gate and stops the gateway and the mock; processes left over are killed (by pid) and fail
// the test. When the test failed, the gateway log's tail is logged. Close is idempotent.
func (h *Host) Close(tb testing.TB) {
	tb.Helper()
	if h.Mock != nil {
		_ = h.Mock.Release()
	}
	if h.Gateway != nil {
		if tb.Failed() {
			tb.Logf("gateway log (tail):\n%s", h.Gateway.LogTail(4000))
		}
		if err := h.Gateway.Stop(); err != nil {
			tb.Error(err)
		}
	}
	if h.Mock != nil {
		if err := h.Mock.Stop(); err != nil {
			tb.Error(err)
		}
	}
	if pids := KillLeftovers(h.Env.Marker); len(pids) > 0 {
		tb.Errorf("processes left over after stopping the host (killed): %v", pids)
	}
}
