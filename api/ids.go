package api

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// maxIDLen is the longest agent, session or entry id accepted.
const maxIDLen = 128

// checkSegment checks one unescaped path segment of an /api path: 1 to 128
// characters of letters, digits, "-", "_", "." and ":", not starting with
// "." (so never "." or ".." nor a hidden name). Anything else (a
// separator, an absolute path, a NUL byte, a unicode slash such as U+2215
// or U+FF0F) is refused with what was found.
func checkSegment(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("empty segment (expected an id of letters, digits, '-', '_', '.', ':')")
	case v == "." || v == "..":
		return fmt.Errorf("%q is a relative path element, expected an id", v)
	case !utf8.ValidString(v):
		return fmt.Errorf("%q is not valid UTF-8", v)
	case utf8.RuneCountInString(v) > maxIDLen:
		return fmt.Errorf("%.40q… has %d characters, expected at most %d", v, utf8.RuneCountInString(v), maxIDLen)
	case v[0] == '.':
		return fmt.Errorf("%q starts with '.', expected an id (hidden names are not sessions)", v)
	}
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ':':
		case r == 0:
			return fmt.Errorf("%q contains a NUL byte", v)
		case r == '/' || r == '\\':
			return fmt.Errorf("%q contains a path separator %q, expected an id", v, r)
		default:
			return fmt.Errorf("%q contains %q (U+%04X), expected only letters, digits, '-', '_', '.', ':'", v, r, r)
		}
	}
	return nil
}

// param returns a validated path parameter. checkPath has already refused
// bad segments; this is the second line, so that a handler never sees an
// unchecked id even when mounted behind another router.
func param(r *http.Request, wildcard string) (string, error) {
	v := r.PathValue(wildcard)
	if err := checkSegment(v); err != nil {
		return "", fmt.Errorf("invalid %s: %v: %w", paramName(wildcard), err, bs.ErrInvalid)
	}
	return v, nil
}
