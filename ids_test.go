package brainsurgeon_test

import (
	"errors"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func TestIDRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	kinds := []bs.IDKind{bs.IDName, bs.IDEntry, bs.IDSessionFile, bs.IDTrash}
	for _, tt := range []struct {
		id string
		// ok says, per kind (IDName, IDEntry, IDSessionFile, IDTrash),
		// whether the id is accepted.
		ok [4]bool
		// found is in every refusal.
		found string
	}{
		{"a1b2c3d4", [4]bool{true, true, true, true}, ""},
		{"A-Z_0.9", [4]bool{true, true, true, true}, ""},
		{"agent:main:main", [4]bool{true, true, false, true}, "contains ':'"},
		{".abc", [4]bool{false, true, false, false}, "starts with '.'"},
		{"a.", [4]bool{true, true, true, true}, ""},
		{".", [4]bool{}, "relative path element"},
		{"..", [4]bool{}, "relative path element"},
		{"", [4]bool{}, "empty"},
		{long(128), [4]bool{true, true, true, true}, ""},
		{long(129), [4]bool{false, false, false, true}, "129 characters"},
		{long(255), [4]bool{false, false, false, true}, "255 characters"},
		{long(256), [4]bool{}, "256 characters"},
		{"x/../y", [4]bool{}, "path separator '/'"},
		{`a\b`, [4]bool{}, `path separator '\\'`},
		{"a\x00b", [4]bool{}, "NUL byte"},
		{"a b", [4]bool{}, "contains ' '"},
		{"a\u2215b", [4]bool{}, "U+2215"},
		{"é", [4]bool{}, "U+00E9"},
		{"a\xffb", [4]bool{}, "not valid UTF-8"},
	} {
		for k, kind := range kinds {
			err := kind.Check(tt.id)
			if (err == nil) != tt.ok[k] {
				t.Errorf("kind %d: Check(%.20q) = %v, want ok %v", kind, tt.id, err, tt.ok[k])
				continue
			}
			if err == nil {
				if f := kind.Found(tt.id); f != "" {
					t.Errorf("kind %d: Found(%.20q) = %q for an accepted id", kind, tt.id, f)
				}
				continue
			}
			if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), tt.found) ||
				!strings.Contains(err.Error(), "not allowed: expected "+kind.Expected()) {
				t.Errorf("kind %d: Check(%.20q) = %v, want ErrInvalid, %q and what was expected", kind, tt.id, err, tt.found)
			}
		}
	}
}

func TestCheckSegment(t *testing.T) {
	for _, tt := range []struct {
		s     string
		found string // "" when accepted
	}{
		{"main", ""},
		{"agent:main", ""},
		{".hidden", ""},
		{"é ü", ""},
		{strings.Repeat("a", bs.MaxSegmentLen), ""},
		{strings.Repeat("a", bs.MaxSegmentLen+1), "256 bytes"},
		{"", "empty"},
		{".", "relative path element"},
		{"..", "relative path element"},
		{"a/b", "path separator"},
		{`a\b`, "path separator"},
		{"a\x00b", "NUL byte"},
	} {
		err := bs.CheckSegment(tt.s)
		switch {
		case tt.found == "" && err != nil:
			t.Errorf("CheckSegment(%.20q) = %v, want nil", tt.s, err)
		case tt.found != "" && (err == nil || !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), tt.found)):
			t.Errorf("CheckSegment(%.20q) = %v, want ErrInvalid saying %q", tt.s, err, tt.found)
		}
	}
}

func TestNewEntryID(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		id, err := bs.NewEntryID(func(id string) bool { return seen[id] })
		if err != nil || len(id) != 8 || strings.Trim(id, "0123456789abcdef") != "" || seen[id] {
			t.Fatalf("NewEntryID = %q, %v; want 8 fresh lowercase hex digits", id, err)
		}
		if err := bs.IDEntry.Check(id); err != nil {
			t.Fatalf("NewEntryID made an id the entry rule refuses: %v", err)
		}
		seen[id] = true
	}
	if id, err := bs.NewEntryID(func(string) bool { return true }); err == nil {
		t.Fatalf("NewEntryID with every id taken = %q, want an error", id)
	}
	if _, err := bs.NewEntryID(nil); err != nil {
		t.Fatalf("NewEntryID(nil) = %v", err)
	}
}
