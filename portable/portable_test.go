package portable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/portable"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Date(2026, 7, 2, 8, 0, 0, 0, time.UTC) }

// idsOf returns the "id" of each line after the header.
func idsOf(t *testing.T, lines [][]byte) string {
	t.Helper()
	var out []string
	for _, l := range lines[1:] {
		var e struct{ ID string }
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
		out = append(out, e.ID)
	}
	return strings.Join(out, " ")
}

func TestBranch(t *testing.T) {
	tr, _ := open(t, fixture)
	ctx := context.Background()
	for _, tt := range []struct{ at, want string }{
		{"", "u1 a1 r1 a2 u2 a3 c1 u3 a4 c2 u4"},
		{"a4", "u1 a1 r1 a2 u2 a3 c1 u3 a4"},
		{"x1", "u1 a1 r1 a2 x1"},
		{"u1", "u1"},
	} {
		t.Run("at "+tt.at, func(t *testing.T) {
			s, err := portable.Branch(ctx, tr, tt.at, portable.BranchOptions{ID: "new-1", Clock: fixedClock{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := idsOf(t, s.Lines); got != tt.want {
				t.Errorf("branch at %q: %s, want %s", tt.at, got, tt.want)
			}
			wantHeader := `{"type":"session","version":3,"id":"new-1","timestamp":"2026-07-02T08:00:00.000Z","cwd":"/w","parentSession":` + quote(tr.Ref().Path) + `}`
			if string(s.Lines[0]) != wantHeader {
				t.Errorf("header %s\nwant   %s", s.Lines[0], wantHeader)
			}
			for _, l := range s.Lines[1:] {
				if !containsLine(fixture, l) {
					t.Errorf("line not copied byte for byte: %s", l)
				}
			}
		})
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func containsLine(lines []string, l []byte) bool {
	for _, x := range lines {
		if x == string(l) {
			return true
		}
	}
	return false
}

func TestBranchUnknownAt(t *testing.T) {
	tr, _ := open(t, fixture)
	_, err := portable.Branch(context.Background(), tr, "a9", portable.BranchOptions{})
	if !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	for _, want := range []string{`"a9"`, "a1", "a2", "u4", "c2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not list %s", err, want)
		}
	}
}

// newStore returns a JSONL store over a fresh agents dir with an agent
// "main" and its sessions dir.
func newStore(t *testing.T) (*session.Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return session.NewStore(root), dir
}

// listing returns the names in dir.
func listing(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

func TestCreate(t *testing.T) {
	tr, _ := open(t, fixture)
	ctx := context.Background()
	st, dir := newStore(t)
	s, err := portable.Branch(ctx, tr, "a4", portable.BranchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := portable.Create(ctx, st, "main", s)
	if err != nil {
		t.Fatal(err)
	}
	if ref.ID != s.ID || ref.Agent != "main" || ref.Path != filepath.Join(dir, s.ID+".jsonl") {
		t.Errorf("ref %+v", ref)
	}
	got, err := os.ReadFile(ref.Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(bytes.Join(s.Lines, []byte("\n")), '\n'); !bytes.Equal(got, want) {
		t.Errorf("file differs from the lines")
	}
	// The store lists the new session, and reads the branch back.
	ntr, err := st.Open(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := ntr.Header(); h.ParentSession != tr.Ref().Path || h.ID != s.ID {
		t.Errorf("header %+v", h)
	}
	// Never replaces: the same id again fails and leaves the file as it was.
	if _, err := portable.Create(ctx, st, "main", s); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("second create: err = %v, want ErrInvalid", err)
	}
	if again, _ := os.ReadFile(ref.Path); !bytes.Equal(again, got) {
		t.Error("second create changed the file")
	}
	if l := listing(t, dir); l != s.ID+".jsonl" {
		t.Errorf("sessions dir holds %s", l)
	}
	// Bad input writes nothing.
	for _, tt := range []struct {
		name, agent string
		lines       [][]byte
		want        error
	}{
		{"no header", "main", [][]byte{[]byte(`{"type":"message","id":"x"}`)}, bs.ErrInvalid},
		{"bad id", "main", [][]byte{[]byte(`{"type":"session","id":"../x"}`)}, bs.ErrInvalid},
		{"newline", "main", [][]byte{[]byte(`{"type":"session","id":"n1"}`), []byte("{\n}")}, bs.ErrInvalid},
		{"not json", "main", [][]byte{[]byte(`{"type":"session","id":"n2"}`), []byte(`{`)}, bs.ErrInvalid},
		{"bad agent", "../main", [][]byte{[]byte(`{"type":"session","id":"n3"}`)}, bs.ErrInvalid},
		{"no agent dir", "other", [][]byte{[]byte(`{"type":"session","id":"n4"}`)}, bs.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := st.Create(ctx, tt.agent, tt.lines); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if l := listing(t, dir); l != s.ID+".jsonl" {
				t.Errorf("sessions dir holds %s", l)
			}
		})
	}
}

func TestCreateSQLiteRefuses(t *testing.T) {
	st := sqlite.NewStore(t.TempDir(), sqlite.Options{})
	var c bs.Store = st
	_, err := c.Create(context.Background(), "main", [][]byte{[]byte(`{"type":"session","id":"n1"}`)})
	if !errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), "never inserts rows") {
		t.Errorf("err = %v, want ErrUnsupported saying BrainSurgeon never inserts rows", err)
	}
}
