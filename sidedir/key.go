package sidedir

import (
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// MaxKeyLen is the length of the longest key, in bytes. The name of a
// per-entry file, the key and ".json.zst", stays within the 255 bytes a
// file name may have.
const MaxKeyLen = 200

// ValidKey checks the key of a record. A key is an entry id, or any other
// id a writer keys its records by in the session, such as a tool-call id
// ("toolu_01A09q90qw90lq917835lq9", "call_AbC123xyz", "call_abc|fc_123"):
// 1 to MaxKeyLen bytes of printable ASCII other than space, '/' and '\',
// and neither "." nor "..". The key names a per-entry file
// ("<key>.json"), so no key reaches outside the side directory; in a
// pack's index it is a JSON string like any other. An unacceptable key is
// an error wrapping brainsurgeon.ErrInvalid.
func ValidKey(key string) error {
	if key == "" || len(key) > MaxKeyLen || key == "." || key == ".." {
		return fmt.Errorf("side record key %q: expected 1 to %d bytes, not \".\" or \"..\": %w", key, MaxKeyLen, bs.ErrInvalid)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '\\' {
			return fmt.Errorf("side record key %q: byte %q not allowed (expected printable ASCII other than space, '/' and '\\'): %w", key, c, bs.ErrInvalid)
		}
	}
	return nil
}

// plain reports whether s is printable ASCII without a quote or a
// backslash: JSON writes it as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
