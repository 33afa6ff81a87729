package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// WantsJSON reports whether args ask for JSON output: a --json (or -json)
// flag that is true, before any "--".
func WantsJSON(args []string) bool {
	want := false
	for _, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		want = true
		if hasVal {
			want, _ = strconv.ParseBool(val)
		}
	}
	return want
}

// Kind names the class of err for JSON output: "usage", "not_found",
// "ambiguous", "busy", "changed", "invalid", "unsupported",
// "unavailable" (the side store cannot be reached now; try later),
// "interrupted", or "problem" for any other error.
func Kind(err error) string {
	var ue *UsageError
	switch {
	case errors.As(err, &ue):
		return "usage"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, bs.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, bs.ErrNotFound):
		return "not_found"
	case errors.Is(err, bs.ErrAmbiguous):
		return "ambiguous"
	case errors.Is(err, bs.ErrBusy):
		return "busy"
	case errors.Is(err, bs.ErrChanged):
		return "changed"
	case errors.Is(err, bs.ErrInvalid), errors.Is(err, bs.ErrMalformed):
		return "invalid"
	case errors.Is(err, bs.ErrUnsupported):
		return "unsupported"
	}
	return "problem"
}

// inOutput marks an error that WriteJSON already put into the output.
type inOutput struct{ error }

func (e inOutput) Unwrap() error { return e.error }

// WriteJSON writes v to w as indented JSON (HTML characters not escaped)
// and returns err. When err is not nil, v must encode as a JSON object:
// "error" and "kind" members are added to it, so that stdout holds one
// JSON document, and the error returned wraps err so that ExitJSON does
// not print it to stdout a second time.
func WriteJSON(w io.Writer, v any, err error) error {
	if err == nil {
		// Encoded with encoding/json's rules, the same bytes as Encode
		// then Indent (TestWriteJSONMatchesEncodingJSON), and streamed:
		// the 6 MB document of a prune that lists 21,500 entries held
		// 1.5–2.5 MB more at the command's peak RSS when buffered
		// whole. A value that cannot be encoded (a NaN, a time past
		// year 9999) must not leave half a document on stdout, so the
		// value is encoded once into nothing first: both passes take
		// 39 ms for those 21,500 entries, where Encode then Indent
		// took 50 ms.
		if e := jsonv2.MarshalWrite(io.Discard, v, jsonOptions...); e != nil {
			return e
		}
		bw := bufio.NewWriterSize(w, 64<<10)
		if e := jsonv2.MarshalWrite(bw, v, jsonOptions...); e != nil {
			return e
		}
		bw.WriteByte('\n')
		return bw.Flush()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if e := enc.Encode(v); e != nil {
		return e
	}
	doc := bytes.TrimSpace(buf.Bytes())
	if len(doc) < 2 || doc[0] != '{' {
		return fmt.Errorf("JSON output with an error: %T is not an object", v)
	}
	tail, e := json.Marshal(jsonError{Error: bs.ErrorMessage(err), Kind: Kind(err)})
	if e != nil {
		return e
	}
	if string(doc) == "{}" {
		doc = tail
	} else {
		tail[0] = ','
		doc = append(doc[:len(doc)-1:len(doc)-1], tail...)
	}
	var out bytes.Buffer
	if e := json.Indent(&out, doc, "", "  "); e != nil {
		return e
	}
	out.WriteByte('\n')
	if _, e := w.Write(out.Bytes()); e != nil {
		return e
	}
	return inOutput{err}
}

// jsonOptions are encoding/json's rules for go-json-experiment, without
// HTML escapes, indented by two spaces.
var jsonOptions = []jsonv2.Options{jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false), jsontext.WithIndent("  ")}

// jsonError is an error on stdout under --json.
type jsonError struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
}

// ExitJSON is Exit for a command line that asked for JSON: the error is
// reported on stderr as Exit does and, unless WriteJSON already put it
// into the output, also written to stdout as {"error": "…", "kind": "…"}.
// The exit status is Exit's.
func ExitJSON(stdout, stderr io.Writer, err error) int {
	code := Exit(stderr, err)
	var done inOutput
	var se *StatusError
	if errors.As(err, &se) && se.Err == nil {
		return code
	}
	if code != ExitOK && !errors.As(err, &done) {
		WriteJSON(stdout, jsonError{Error: bs.ErrorMessage(err), Kind: Kind(err)}, nil)
	}
	return code
}

// ExtractableValue is the JSON value of an "_extractable" setting: true,
// false, a number of messages, or the text itself when it is none of
// these ("" gives nil).
func ExtractableValue(s string) any {
	switch s {
	case "":
		return nil
	case "true":
		return true
	case "false":
		return false
	}
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return s
}

// SetResult is restore.SetResult as the commands print it in JSON: value
// and previous are JSON values (false, 10), not strings.
type SetResult struct {
	*restore.SetResult
	Value    any `json:"value"`
	Previous any `json:"previous,omitempty"`
}

// NewSetResult returns res for JSON output.
func NewSetResult(res *restore.SetResult) SetResult {
	return SetResult{SetResult: res, Value: ExtractableValue(res.Value), Previous: ExtractableValue(res.Previous)}
}

// Unreturned returns an error when a restore did not return every value it
// was asked for (a side file missing or corrupt, or nothing found), and nil
// when it did. The result itself still carries restore.MissingText or
// restore.CorruptText for the missing values; the error only sets the exit
// status and says why.
func Unreturned(res *restore.Result) error {
	var missing, corrupt int
	for k, v := range res.Content {
		if _, ok := res.SizesBytes[k]; ok {
			continue
		}
		if v == restore.MissingText {
			missing++
		} else {
			corrupt++
		}
	}
	if missing+corrupt == 0 {
		if !res.Restored {
			return fmt.Errorf("entry %s: nothing restored", res.EntryID)
		}
		return nil
	}
	var why []string
	if missing > 0 {
		why = append(why, fmt.Sprintf("%s missing", plural.Count(missing, "side value", "side values")))
	}
	if corrupt > 0 {
		why = append(why, fmt.Sprintf("%d corrupt", corrupt))
	}
	return fmt.Errorf("entry %s: %d of %s could not be returned (%s)", res.EntryID, missing+corrupt, plural.Count(len(res.Content), "value", "values"), strings.Join(why, ", "))
}
