package api

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// maxIDLen is the longest agent, session or entry id accepted.
const maxIDLen = 128

// idChars says which characters an id of a path segment may hold.
const idChars = "1 to 128 letters, digits, '-', '_', '.' or ':', not starting with '.'"

// checkSegment checks one unescaped path segment of an /api path: 1 to 128
// characters of letters, digits, "-", "_", "." and ":", not starting with
// "." (so never "." or ".." nor a hidden file name). Anything else (a
// separator, an absolute path, a NUL byte, a unicode slash such as U+2215
// or U+FF0F) is refused; the error says what was found, and segmentError
// adds what was expected.
func checkSegment(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("found an empty segment")
	case v == "." || v == "..":
		return fmt.Errorf("found %q, a relative path element", v)
	case !utf8.ValidString(v):
		return fmt.Errorf("found %q, which is not valid UTF-8", v)
	case utf8.RuneCountInString(v) > maxIDLen:
		return fmt.Errorf("found %.40q…, which has %d characters", v, utf8.RuneCountInString(v))
	case v[0] == '.':
		return fmt.Errorf("found %q, which starts with '.'", v)
	}
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ':':
		case r == 0:
			return fmt.Errorf("found %q, which contains a NUL byte", v)
		case r == '/' || r == '\\':
			return fmt.Errorf("found %q, which contains a path separator %q", v, r)
		default:
			return fmt.Errorf("found %q, which contains %q (U+%04X)", v, r, r)
		}
	}
	return nil
}

// segmentError is the message of a bad path segment: the parameter's
// user-facing name, what it should be, and what was found (err, from
// checkSegment).
func segmentError(name string, err error) error {
	return fmt.Errorf("invalid %s: expected %s (%s), %v", name, expectedOf(name), idChars, err)
}

// expectedOf names what a path parameter holds, for error messages.
func expectedOf(name string) string {
	switch name {
	case "entry_id":
		return "an entry id, the entry's __id or id as GET /api/sessions/{agent}/{id} lists it"
	case "session_id":
		return "a session id or a unique prefix of 8 characters or more, or a session key"
	case "agent":
		return "an agent name"
	case "name":
		return "a job name"
	}
	return "an id"
}

// param returns a validated path parameter. checkPath has already refused
// bad segments; this is the second line, so that a handler never sees an
// unchecked id even when mounted behind another router.
func param(r *http.Request, wildcard string) (string, error) {
	v := r.PathValue(wildcard)
	if err := checkSegment(v); err != nil {
		return "", fmt.Errorf("%w: %w", segmentError(paramName(wildcard), err), bs.ErrInvalid)
	}
	return v, nil
}
