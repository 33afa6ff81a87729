package api

import (
	"errors"
	"fmt"
	"net/http"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// checkSegment checks one unescaped path segment of an /api path by the
// rule for names, brainsurgeon.IDName (so never "." or "..", a hidden file
// name, a separator, a NUL byte or a unicode slash such as U+2215). The
// error says what was found; segmentError adds what was expected.
func checkSegment(v string) error {
	if found := bs.IDName.Found(v); found != "" {
		return errors.New(found)
	}
	return nil
}

// segmentError is the message of a bad path segment: the parameter's
// user-facing name, what it should be, and what was found (err, from
// checkSegment).
func segmentError(name string, err error) error {
	return fmt.Errorf("invalid %s: expected %s (%s), %v", name, expectedOf(name), bs.IDName.Expected(), err)
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
