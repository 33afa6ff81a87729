package logging_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/logging"
)

func TestParseLevel(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want slog.Level
		bad  bool
	}{
		{"trace", logging.LevelTrace, false},
		{"DEBUG", slog.LevelDebug, false},
		{"", slog.LevelInfo, false},
		{"info", slog.LevelInfo, false},
		{"warning", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{"loud", slog.LevelInfo, true},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := logging.ParseLevel(tt.in)
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("ParseLevel(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestNewLevelsActorAndStderr(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "logs", logging.FileName)
	var stderr bytes.Buffer
	log, closer, err := logging.New(logging.Options{Level: logging.LevelTrace, File: file, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	log.Log(context.Background(), logging.LevelTrace, "prune: start")
	log.Debug("loadSession: main/abc123 cache hit")
	log.InfoContext(logging.WithActor(context.Background(), "key-1"), "prune: main/abc123, entries 10")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"level=TRACE msg=\"prune: start\"", "level=DEBUG msg=\"loadSession: main/abc123 cache hit\"", "actor=key-1"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("log file lacks %q:\n%s", want, data)
		}
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	fi, err := os.Stat(filepath.Dir(file))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("logs dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}

	quiet, c2, err := logging.New(logging.Options{Level: slog.LevelInfo, File: file})
	if err != nil {
		t.Fatal(err)
	}
	quiet.Debug("hidden line")
	c2.Close()
	data, _ = os.ReadFile(file)
	if strings.Contains(string(data), "hidden line") {
		t.Error("a debug record was written at level info")
	}
}

func TestRotating(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	r, err := logging.OpenRotating(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("a", 39) + "\n") // 40 bytes
	for i := 0; i < 10; i++ {
		if _, err := r.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		size int64
	}{{"x.log", 80}, {"x.log.1", 80}, {"x.log.2", 80}} {
		fi, err := os.Stat(filepath.Join(dir, tt.name))
		if err != nil || fi.Size() != tt.size {
			t.Errorf("%s: %v, %v; want size %d", tt.name, fi, err, tt.size)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.log.3")); err == nil {
		t.Error("x.log.3 exists; only 2 rotated files are kept")
	}
	if _, err := r.Write(line); err == nil {
		t.Error("write after Close succeeded")
	}
	// Reopening appends.
	r, err = logging.OpenRotating(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("b\n"))
	r.Close()
	if fi, _ := os.Stat(path); fi.Size() != 82 {
		t.Errorf("reopened file size = %d, want 82", fi.Size())
	}
}
