package hostfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func TestAppend(t *testing.T) {
	for _, tc := range []struct {
		name     string
		original string
		lines    []string
		want     string
	}{
		{"Terminated", "{\"a\":1}\n", []string{`{"b":2}`}, "{\"a\":1}\n{\"b\":2}\n"},
		{"AddsMissingNewline", "{\"a\":1}", []string{`{"b":2}`, `{"c":3}`}, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"},
		{"EmptyFile", "", []string{`{"b":2}`}, "{\"b\":2}\n"},
		{"CRLFKept", "{\"a\":1}\r\n", []string{"{\"b\":2}\r"}, "{\"a\":1}\r\n{\"b\":2}\r\n"},
		{"NoLines", "{\"a\":1}", nil, "{\"a\":1}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, []byte(tc.original))
			var lines [][]byte
			for _, l := range tc.lines {
				lines = append(lines, []byte(l))
			}
			before := fingerprint(t, p)
			if err := Append(context.Background(), p, lines, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, p); string(got) != tc.want {
				t.Fatalf("content %q, want %q", got, tc.want)
			}
			if fingerprint(t, p).Inode != before.Inode {
				t.Fatal("append replaced the file")
			}
			if exists(p + ".lock") {
				t.Fatal("lock left behind")
			}
		})
	}
}

func TestAppendRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		setup func(t *testing.T, p string) WriteOptions
		want  error
		msg   string
	}{
		{"LineWithNewline", []string{`{"b":2}`, "{\"c\":\n3}"}, nil, bs.ErrInvalid, "line 2 of 2 contains a newline"},
		{"EmptyLine", []string{""}, nil, bs.ErrInvalid, "line 1 of 1 is empty"},
		{"MissingFile", []string{`{"b":2}`}, func(t *testing.T, p string) WriteOptions {
			os.Remove(p)
			return WriteOptions{}
		}, bs.ErrNotFound, "no such file"},
		{"LiveLockHolder", []string{`{"b":2}`}, func(t *testing.T, p string) WriteOptions {
			writeFile(t, p+".lock", Payload(livePID(t), time.Now()))
			return WriteOptions{Lock: LockOptions{Timeout: 100 * time.Millisecond}}
		}, bs.ErrBusy, "held by pid"},
		{"RecheckFails", []string{`{"b":2}`}, func(t *testing.T, p string) WriteOptions {
			return WriteOptions{Recheck: func() error { return bs.ErrBusy }}
		}, bs.ErrBusy, "session busy"},
		{"Directory", []string{`{"b":2}`}, func(t *testing.T, p string) WriteOptions {
			os.Remove(p)
			os.Mkdir(p, 0o700)
			return WriteOptions{}
		}, bs.ErrInvalid, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, []byte("{\"a\":1}\n"))
			var opts WriteOptions
			if tc.setup != nil {
				opts = tc.setup(t, p)
			}
			var lines [][]byte
			for _, l := range tc.lines {
				lines = append(lines, []byte(l))
			}
			err := Append(context.Background(), p, lines, opts)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "append "+p+": ") {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				if got := readFile(t, p); string(got) != "{\"a\":1}\n" {
					t.Fatalf("content changed: %q", got)
				}
			} else if tc.want == bs.ErrNotFound && exists(p) {
				t.Fatal("Append created the missing file")
			}
		})
	}
}
