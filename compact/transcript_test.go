package compact_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/session"
)

func inspectFile(t *testing.T, data string) (*compact.TranscriptReport, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := session.Open(context.Background(), path, bs.SessionRef{Path: path}, nil)
	if err != nil {
		return nil, err // Open refuses a file that is not a transcript
	}
	return compact.InspectTranscript(context.Background(), tr)
}

// TestInspectNotTranscript checks that a file in which no line is a header
// or an entry is "not a transcript", and that a transcript lists only the
// first MaxMalformed malformed lines with their total.
func TestInspectNotTranscript(t *testing.T) {
	header := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	garbage := strings.Repeat("not json at all\n", 25)
	for _, tt := range []struct {
		name      string
		data      string
		not       bool
		listed    int
		malformed int
	}{
		{name: "Markdown", data: "# README\n\nSome text.\n", not: true},
		{name: "RandomBytes", data: "\x1f\x8b\x00\xff\xfe garbage\n\x00\x01", not: true},
		{name: "BlankOnly", data: "\n\n", not: true},
		{name: "Empty", data: "", not: true},
		{name: "ObjectsWithoutType", data: "{\"a\":1}\n{\"a\":2}\n", not: true},
		{name: "Hello", data: "hello\n", not: true},
		{name: "MalformedThenHeader", data: "oops\n" + header, listed: 1, malformed: 1},
		{name: "HeaderOnly", data: header},
		{name: "CappedMalformed", data: header + garbage, listed: compact.MaxMalformed, malformed: 25},
		{name: "FewMalformed", data: header + "oops\n", listed: 1, malformed: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := inspectFile(t, tt.data)
			if tt.not {
				if !errors.Is(err, bs.ErrNotTranscript) || !errors.Is(err, session.ErrNotTranscript) || !errors.Is(err, bs.ErrInvalid) || rep != nil {
					t.Fatalf("got %v, %+v; want an error wrapping ErrNotTranscript and ErrInvalid", err, rep)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Malformed) != tt.listed || rep.MalformedTotal != tt.malformed {
				t.Fatalf("malformed: %d listed, %d in all; want %d, %d", len(rep.Malformed), rep.MalformedTotal, tt.listed, tt.malformed)
			}
		})
	}
}

// TestInspectIDLess checks that the values of entries without ids are
// counted apart: only those in an id-less transcript, none in one with ids.
func TestInspectIDLess(t *testing.T) {
	text := strings.Repeat("x", 600)
	v1 := `{"type":"session","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n" +
		`{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"` + text + `"}]}}` + "\n"
	v3 := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"` + text + `"}]}}` + "\n"
	for _, tt := range []struct {
		name    string
		data    string
		entries int
		bytes   int64
	}{
		{name: "V1", data: v1, entries: 1, bytes: int64(len(text) + 2)},
		{name: "V3", data: v3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := inspectFile(t, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			user := rep.Triggers[bs.TriggerUser]
			if rep.IDLessEntries != tt.entries || rep.IDLessBytes != tt.bytes || user.IDLessBytes != tt.bytes {
				t.Fatalf("id-less %d entries, %d bytes (user %d); want %d, %d", rep.IDLessEntries, rep.IDLessBytes, user.IDLessBytes, tt.entries, tt.bytes)
			}
		})
	}
}
