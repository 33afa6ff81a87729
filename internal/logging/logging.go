// Package logging makes the daemon's logger: the levels trace, debug, info,
// warn and error (LOG_LEVEL), written to "<openclaw
// root>/logs/brainsurgeon.log" with size-based rotation, and to stderr as
// well when stderr is a terminal.
//
// Records are slog text lines. Debug records carry their context in the
// message ("loadSession: main/abc123 cache hit"); info records carry the
// actor, when known, as the attribute [KeyActor]: set it with
// Logger.With(KeyActor, who), or put it in the context with [WithActor]
// and log with the *Context methods.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// LevelTrace is the level below debug: the start of each function, entry
// points.
const LevelTrace = slog.Level(-8)

// KeyActor is the attribute key of the actor of an action (an API key's
// name, "scheduler", "cli").
const KeyActor = "actor"

// FileName is the name of the log file in the logs directory.
const FileName = "brainsurgeon.log"

// ParseLevel reads a level name: trace, debug, info, warn (or warning)
// or error, in any case; the empty string is info. Anything else is an
// error that lists the names.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace":
		return LevelTrace, nil
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("log level %q is not one of trace, debug, info, warn, error", s)
}

// LevelName returns the upper-case name of l: TRACE for LevelTrace,
// slog's names otherwise.
func LevelName(l slog.Level) string {
	if l == LevelTrace {
		return "TRACE"
	}
	return l.String()
}

// Dir returns the logs directory of the OpenClaw installation whose
// agents dir is agentsDir: "<agents dir>/../logs".
func Dir(agentsDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(agentsDir)), "logs")
}

// Options tune New.
type Options struct {
	// Level is the lowest level written.
	Level slog.Level
	// File is the log file; empty writes no file.
	File string
	// MaxSize is the size in bytes at which the file is rotated; 0 is
	// DefaultMaxSize.
	MaxSize int64
	// MaxFiles is how many rotated files are kept (.1 … .N); 0 is
	// DefaultMaxFiles.
	MaxFiles int
	// Stderr, when not nil, also receives every record; New's caller
	// passes os.Stderr only when it is a terminal (see IsTerminal).
	Stderr io.Writer
}

// New returns a logger as opts ask, and the closer of its file (a no-op
// when there is none). The logs directory is created (mode 0700) if
// missing.
func New(opts Options) (*slog.Logger, io.Closer, error) {
	ho := &slog.HandlerOptions{Level: opts.Level, ReplaceAttr: replaceLevel}
	var hs []slog.Handler
	var closer io.Closer = nopCloser{}
	if opts.File != "" {
		f, err := OpenRotating(opts.File, opts.MaxSize, opts.MaxFiles)
		if err != nil {
			return nil, nil, err
		}
		closer = f
		hs = append(hs, slog.NewTextHandler(f, ho))
	}
	if opts.Stderr != nil {
		hs = append(hs, slog.NewTextHandler(opts.Stderr, ho))
	}
	var h slog.Handler = slog.DiscardHandler
	switch len(hs) {
	case 1:
		h = hs[0]
	case 2:
		h = slog.NewMultiHandler(hs...)
	}
	return slog.New(actorHandler{h}), closer, nil
}

// IsTerminal reports whether f is a terminal (a character device).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// replaceLevel names LevelTrace "TRACE".
func replaceLevel(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.LevelKey && len(groups) == 0 {
		if l, ok := a.Value.Any().(slog.Level); ok {
			a.Value = slog.StringValue(LevelName(l))
		}
	}
	return a
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

type actorKey struct{}

// WithActor returns ctx carrying actor: records logged with the *Context
// methods of a logger made by New get the attribute KeyActor.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor WithActor put in ctx, or "".
func ActorFrom(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// actorHandler adds the context's actor to each record.
type actorHandler struct{ slog.Handler }

func (h actorHandler) Handle(ctx context.Context, r slog.Record) error {
	if a := ActorFrom(ctx); a != "" {
		r = r.Clone()
		r.AddAttrs(slog.String(KeyActor, a))
	}
	return h.Handler.Handle(ctx, r)
}

func (h actorHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return actorHandler{h.Handler.WithAttrs(as)}
}

func (h actorHandler) WithGroup(name string) slog.Handler {
	return actorHandler{h.Handler.WithGroup(name)}
}
