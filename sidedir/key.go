package sidedir

import (
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// ValidKey checks the key of a record: 1 to 128 letters, digits, '-',
// '_', '.' and ':', and not "." or "..". An unacceptable key is an error
// wrapping brainsurgeon.ErrInvalid.
func ValidKey(key string) error {
	if key == "" || len(key) > 128 || key == "." || key == ".." {
		return fmt.Errorf("entry id %q: expected 1 to 128 characters, not \".\" or \"..\": %w", key, bs.ErrInvalid)
	}
	for _, r := range key {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ':':
		default:
			return fmt.Errorf("entry id %q: character %q not allowed (expected letters, digits, '-', '_', '.', ':'): %w", key, r, bs.ErrInvalid)
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
