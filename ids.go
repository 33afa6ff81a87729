package brainsurgeon

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The rules for the ids and names that BrainSurgeon takes from outside or
// from a transcript and turns into a file name or one element of a path.
// Every package checks them here; the kinds differ only where stated.

// MaxSegmentLen is the longest path element, in bytes, that CheckSegment
// accepts: the longest file name the common file systems allow.
const MaxSegmentLen = 255

// CheckSegment checks that s can be one element of a path built from a
// name BrainSurgeon did not choose (an agent directory, a session id
// looked up on disk): 1 to MaxSegmentLen bytes, not "." or "..", without
// "/", "\" or NUL. It allows any other character; an IDKind is stricter.
// The error wraps ErrInvalid and says what was expected and what was
// found.
func CheckSegment(s string) error {
	var found string
	switch {
	case s == "":
		found = "found an empty name"
	case s == "." || s == "..":
		found = fmt.Sprintf("found %q, a relative path element", s)
	case len(s) > MaxSegmentLen:
		found = fmt.Sprintf("found %.40q…, which has %d bytes", s, len(s))
	case strings.ContainsRune(s, 0):
		found = fmt.Sprintf("found %q, which contains a NUL byte", s)
	case strings.ContainsAny(s, `/\`):
		found = fmt.Sprintf("found %q, which contains a path separator", s)
	default:
		return nil
	}
	return fmt.Errorf("expected a path element (1 to %d bytes, not \".\" or \"..\", without '/', '\\' or NUL), %s: %w",
		MaxSegmentLen, found, ErrInvalid)
}

// IDKind names a kind of id whose characters are restricted: ASCII
// letters and digits, '-', '_', '.' and, for most kinds, ':'. The kinds
// differ in length, in ':' and in a leading '.'; Check states each.
type IDKind int

const (
	// IDName is a name in an /api path (an agent, a session id or prefix,
	// an entry id, a job name): 1 to 128 characters, ':' allowed, not
	// starting with '.' (so never "." or "..", nor a hidden file).
	IDName IDKind = iota
	// IDEntry is an entry id, which names a side file: 1 to 128
	// characters, ':' allowed, not "." or ".." (a leading '.' is allowed:
	// entry ids are the host's, and a side file never lies bare in a
	// directory listing).
	IDEntry
	// IDSessionFile is a session id that becomes a transcript's file name
	// (<id>.jsonl): 1 to 128 characters, no ':', not starting with '.'.
	IDSessionFile
	// IDTrash is a trash item's id (<agent>_<session>_<time>-<random>):
	// 1 to 255 characters, ':' allowed, not starting with '.'.
	IDTrash
)

// idRule is what one IDKind allows.
type idRule struct {
	what       string
	max        int
	colon      bool
	leadingDot bool
}

var idRules = [...]idRule{
	IDName:        {"id", 128, true, false},
	IDEntry:       {"entry id", 128, true, true},
	IDSessionFile: {"session id", 128, false, false},
	IDTrash:       {"trash id", 255, true, false},
}

func (k IDKind) rule() idRule {
	if k < 0 || int(k) >= len(idRules) {
		return idRules[IDName]
	}
	return idRules[k]
}

// Expected describes the ids of kind k, for error messages: "1 to 128
// letters, digits, '-', '_', '.' or ':', not starting with '.'".
func (k IDKind) Expected() string {
	r := k.rule()
	chars := "'-', '_' or '.'"
	if r.colon {
		chars = "'-', '_', '.' or ':'"
	}
	dot := "not starting with '.'"
	if r.leadingDot {
		dot = `not "." or ".."`
	}
	return fmt.Sprintf("1 to %d letters, digits, %s, %s", r.max, chars, dot)
}

// Found returns "" when id is an id of kind k, or what is wrong with it,
// starting "found": `found ".abc", which starts with '.'`.
func (k IDKind) Found(id string) string {
	r := k.rule()
	switch {
	case id == "":
		return "found an empty id"
	case id == "." || id == "..":
		return fmt.Sprintf("found %q, a relative path element", id)
	case !utf8.ValidString(id):
		return fmt.Sprintf("found %q, which is not valid UTF-8", id)
	case utf8.RuneCountInString(id) > r.max:
		return fmt.Sprintf("found %.40q…, which has %d characters", id, utf8.RuneCountInString(id))
	case id[0] == '.' && !r.leadingDot:
		return fmt.Sprintf("found %q, which starts with '.'", id)
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		case c == ':' && r.colon:
		case c == 0:
			return fmt.Sprintf("found %q, which contains a NUL byte", id)
		case c == '/' || c == '\\':
			return fmt.Sprintf("found %q, which contains a path separator %q", id, c)
		default:
			return fmt.Sprintf("found %q, which contains %q (U+%04X)", id, c, c)
		}
	}
	return ""
}

// Check returns nil when id is an id of kind k, or an error wrapping
// ErrInvalid that names the kind and says what was expected and what was
// found.
func (k IDKind) Check(id string) error {
	found := k.Found(id)
	if found == "" {
		return nil
	}
	return fmt.Errorf("%s not allowed: expected %s, %s: %w", k.rule().what, k.Expected(), found, ErrInvalid)
}

// NewEntryID returns a fresh entry id in the host's form, 8 random hex
// digits (pi's generateId), for which taken reports false; taken may be
// nil. It gives up with an error after 100 ids that were all taken.
func NewEntryID(taken func(id string) bool) (string, error) {
	var b [4]byte
	for range 100 {
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
		id := hex.EncodeToString(b[:])
		if taken == nil || !taken(id) {
			return id, nil
		}
	}
	return "", fmt.Errorf("entry id: expected a free 8-hex-digit id, found 100 random ids all taken")
}

// MaxSideKeyLen is the length of the longest side record key, in bytes. The name of a
// per-entry file, the key and ".json.zst", stays within the 255 bytes a
// file name may have.
const MaxSideKeyLen = 200

// CheckSideKey checks the key of a side record (SideRecord.EntryID). A key is an entry id, or any other
// id a writer keys its records by in the session, such as a tool-call id
// ("toolu_01A09q90qw90lq917835lq9", "call_AbC123xyz", "call_abc|fc_123"):
// 1 to MaxSideKeyLen bytes of printable ASCII other than space, '/' and '\',
// and neither "." nor "..". The key names a per-entry file
// ("<key>.json"), so no key reaches outside the side directory; in a
// pack's index it is a JSON string like any other. An unacceptable key is
// an error wrapping ErrInvalid.
func CheckSideKey(key string) error {
	if key == "" || len(key) > MaxSideKeyLen || key == "." || key == ".." {
		return fmt.Errorf("side record key %q: expected 1 to %d bytes, not \".\" or \"..\": %w", key, MaxSideKeyLen, ErrInvalid)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '\\' {
			return fmt.Errorf("side record key %q: byte %q not allowed (expected printable ASCII other than space, '/' and '\\'): %w", key, c, ErrInvalid)
		}
	}
	return nil
}
