package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// aliasPurgeControl is the first design's name of keep_purge_control_calls.
const aliasPurgeControl = "keep_restore_remote_calls"

// obsoleteFields are the fields of earlier versions that nothing reads any
// more, each with the reason. Loading a file that holds one ignores it
// (logged as an upgrade; saving drops it), so an old config keeps loading;
// Merge refuses one with its reason, so a client that sets it is told that
// it would change nothing.
var obsoleteFields = map[string]string{
	"scan_interval_seconds": "nothing reads it: automatic pruning runs on the auto_cron schedule",
}

// field describes one field of Config: its JSON name, how to read it from
// JSON (decode returns "" or a message saying what was expected and found),
// how to show it, and how to check it (nil when every value is valid).
type field struct {
	name   string
	get    func(c *Config) any
	decode func(c *Config, v jsontext.Value) string
	check  func(c *Config) string
}

// fields lists the fields of Config in struct order.
var fields = []field{
	{"enabled",
		func(c *Config) any { return c.Enabled },
		func(c *Config, v jsontext.Value) string { return decodeBool(v, &c.Enabled) },
		nil},
	{"keep_recent",
		func(c *Config) any { return c.KeepRecent },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.KeepRecent) },
		func(c *Config) string { return atLeast(c.KeepRecent, 0) }},
	{"min_value_length",
		func(c *Config) any { return c.MinValueLength },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.MinValueLength) },
		func(c *Config) string {
			if c.MinValueLength < 1 {
				return fmt.Sprintf("must be 1 byte or more, got %d", c.MinValueLength)
			}
			return ""
		}},
	{"trigger_types",
		func(c *Config) any { return c.TriggerTypes },
		func(c *Config, v jsontext.Value) string { return decodeStrings(v, &c.TriggerTypes) },
		func(c *Config) string { return checkTriggers(c.TriggerTypes) }},
	{"age_threshold_hours",
		func(c *Config) any { return c.AgeThresholdHours },
		func(c *Config, v jsontext.Value) string { return decodeFloat(v, &c.AgeThresholdHours) },
		func(c *Config) string {
			h := c.AgeThresholdHours
			switch {
			case math.IsNaN(h) || math.IsInf(h, 0):
				return "must be a finite number of hours, got " + formatFloat(h)
			case h < 0:
				return "must be 0 or more, got " + formatFloat(h)
			}
			return ""
		}},
	{"auto_cron",
		func(c *Config) any { return c.AutoCron },
		func(c *Config, v jsontext.Value) string { return decodeString(v, &c.AutoCron) },
		func(c *Config) string { return checkCron(c.AutoCron, "*/2 * * * *") }},
	{"retention",
		func(c *Config) any { return c.Retention },
		func(c *Config, v jsontext.Value) string { return decodeString(v, &c.Retention) },
		func(c *Config) string {
			if _, err := c.RetentionDuration(); err != nil {
				return strings.TrimPrefix(err.Error(), "retention: ")
			}
			return ""
		}},
	{"retention_cron",
		func(c *Config) any { return c.RetentionCron },
		func(c *Config, v jsontext.Value) string { return decodeString(v, &c.RetentionCron) },
		func(c *Config) string { return checkCron(c.RetentionCron, "0 */6 * * *") }},
	{"retention_scope",
		func(c *Config) any { return c.RetentionScope },
		func(c *Config, v jsontext.Value) string { return decodeString(v, &c.RetentionScope) },
		func(c *Config) string {
			if c.RetentionScope == ScopeAll || c.RetentionScope == ScopeOrphans {
				return ""
			}
			return fmt.Sprintf("must be %q or %q, got %q", ScopeAll, ScopeOrphans, c.RetentionScope)
		}},
	{"doctor_schedule",
		func(c *Config) any { return c.DoctorSchedule },
		func(c *Config, v jsontext.Value) string { return decodeString(v, &c.DoctorSchedule) },
		func(c *Config) string {
			if c.DoctorSchedule == "" {
				return "" // disabled
			}
			if msg := checkCron(c.DoctorSchedule, DefaultDoctorSchedule); msg != "" {
				return msg + ` (or "" to disable the doctor report)`
			}
			return ""
		}},
	{"keep_purge_control_calls",
		func(c *Config) any { return c.KeepPurgeControlCalls },
		func(c *Config, v jsontext.Value) string { return decodeBool(v, &c.KeepPurgeControlCalls) },
		nil},
	{"keep_after_restore_seconds",
		func(c *Config) any { return c.KeepAfterRestoreSeconds },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.KeepAfterRestoreSeconds) },
		func(c *Config) string { return atLeast(c.KeepAfterRestoreSeconds, 0) }},
	{"idle_seconds",
		func(c *Config) any { return c.IdleSeconds },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.IdleSeconds) },
		func(c *Config) string { return atLeast(c.IdleSeconds, 0) }},
	{"min_saving_tokens",
		func(c *Config) any { return c.MinSavingTokens },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.MinSavingTokens) },
		func(c *Config) string { return atLeast(c.MinSavingTokens, 0) }},
	{"preview_chars",
		func(c *Config) any { return c.PreviewChars },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.PreviewChars) },
		func(c *Config) string {
			if c.PreviewChars < 0 || c.PreviewChars > MaxPreviewChars {
				return fmt.Sprintf("must be between 0 and %d, got %d", MaxPreviewChars, c.PreviewChars)
			}
			return ""
		}},
	{"source_offload_above_chars",
		func(c *Config) any { return c.SourceOffloadAboveChars },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.SourceOffloadAboveChars) },
		func(c *Config) string {
			if c.SourceOffloadAboveChars < MinSourceOffloadAboveChars {
				return fmt.Sprintf("must be %d characters or more, got %d", MinSourceOffloadAboveChars, c.SourceOffloadAboveChars)
			}
			return ""
		}},
	{"source_preview_chars",
		func(c *Config) any { return c.SourcePreviewChars },
		func(c *Config, v jsontext.Value) string { return decodeInt(v, &c.SourcePreviewChars) },
		func(c *Config) string {
			if c.SourcePreviewChars < 0 || c.SourcePreviewChars > MaxPreviewChars {
				return fmt.Sprintf("must be between 0 and %d, got %d", MaxPreviewChars, c.SourcePreviewChars)
			}
			return ""
		}},
	{"side_store",
		func(c *Config) any { return c.SideStore },
		func(c *Config, v jsontext.Value) string { return decodeString(v, &c.SideStore) },
		func(c *Config) string { return checkSideStore(c.SideStore) }},
	{"compaction",
		func(c *Config) any { return c.Compaction },
		func(c *Config, v jsontext.Value) string { return decodeObject(v, &c.Compaction, compactionFields) },
		nil},
	{"last_run_at",
		func(c *Config) any { return c.LastRunAt },
		func(c *Config, v jsontext.Value) string { return decodeTime(v, &c.LastRunAt) },
		nil},
	{"last_retention_run_at",
		func(c *Config) any { return c.LastRetentionRunAt },
		func(c *Config, v jsontext.Value) string { return decodeTime(v, &c.LastRetentionRunAt) },
		nil},
}

// fieldIndex maps a JSON name to its index in fields.
var fieldIndex = func() map[string]int {
	m := make(map[string]int, len(fields))
	for i, f := range fields {
		m[f.name] = i
	}
	return m
}()

// FieldNames returns the JSON names of the fields of Config, in the order
// they appear in the file. The caller owns the returned slice.
func FieldNames() []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return names
}

// overlay is what reading a JSON object onto a Config found.
type overlay struct {
	seen     []bool             // indexed like fields: the field was given (directly or by alias)
	aliased  bool               // keep_purge_control_calls came from its alias
	both     bool               // both keep_purge_control_calls and its alias were given
	unknown  []string           // unknown names, in input order, without repeats
	obsolete []string           // obsolete names (see obsoleteFields), in input order
	typeErrs map[int]FieldError // indexed like fields
}

// SyntaxError says where a config that is not one JSON object goes wrong
// and how: malformed JSON, duplicate names, another kind of value than an
// object, trailing data, or no value at all. It wraps
// brainsurgeon.ErrInvalid. [LoadFile] sets Path, so that the message
// reads "<path>:<line>:<column>: …", as compilers and editors show it.
type SyntaxError struct {
	// Path is the file's path, or "" (a request body).
	Path string
	// Line and Column are 1-based; Column counts characters (not bytes)
	// from the start of the line. Offset is the byte offset.
	Line, Column int
	Offset       int64
	// Pointer is the JSON Pointer of the value being read ("/enabled"),
	// or "" outside any member.
	Pointer string
	// Msg says what was expected and what was found.
	Msg string
}

// Error returns "<path>:<line>:<column>: <Msg>", or "line L, column C:
// <Msg>" without a path.
func (e *SyntaxError) Error() string {
	msg := e.Msg
	if e.Pointer != "" {
		msg += fmt.Sprintf(" (in the value of %q)", strings.TrimPrefix(e.Pointer, "/"))
	}
	if e.Path != "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Column, msg)
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, msg)
}

// Unwrap returns brainsurgeon.ErrInvalid.
func (e *SyntaxError) Unwrap() error { return brainsurgeon.ErrInvalid }

// syntaxError returns the *SyntaxError at byte offset off of data.
func syntaxError(data []byte, off int64, pointer, msg string) *SyntaxError {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return &SyntaxError{Line: line, Column: col, Offset: off, Pointer: pointer, Msg: msg}
}

// jsonError turns an error of the JSON decoder over data into a
// *SyntaxError that says where and what: the decoder's own message says
// which character it found and what it expected.
func jsonError(data []byte, err error) *SyntaxError {
	var se *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		msg := se.Err.Error()
		if errors.Is(se.Err, io.ErrUnexpectedEOF) {
			msg = "the text ends in the middle of a value (a missing closing brace, bracket or quote?)"
		}
		return syntaxError(data, se.ByteOffset, string(se.JSONPointer), "config is not valid JSON: "+msg)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return syntaxError(data, int64(len(data)), "", "config is not valid JSON: the text ends in the middle of a value (a missing closing brace, bracket or quote?)")
	}
	return syntaxError(data, 0, "", "config is not valid JSON: "+err.Error())
}

// skipSpace returns the offset of the first byte at or after off that is
// not JSON white space.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
		off++
	}
	return off
}

// apply reads the JSON object data onto c, field by field. Values of the
// wrong JSON type leave their field unchanged and are reported in
// typeErrs. The returned error is a *SyntaxError for input that is not
// one JSON object (malformed JSON, duplicate names, another kind of value,
// trailing data); it wraps brainsurgeon.ErrInvalid.
func (c *Config) apply(data []byte) (overlay, error) {
	o := overlay{seen: make([]bool, len(fields))}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a BOM from a text editor
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	tok, err := dec.ReadToken()
	switch {
	case err == io.EOF:
		return o, syntaxError(data, int64(len(data)), "", "config is empty, expected a JSON object")
	case err != nil:
		return o, jsonError(data, err)
	case tok.Kind() != '{':
		return o, syntaxError(data, skipSpace(data, 0), "", "config must be a JSON object, got "+jsonedit.KindName(tok.Kind()))
	}
	var alias jsontext.Value
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return o, jsonError(data, err)
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return o, jsonError(data, err)
		}
		if name == aliasPurgeControl {
			alias = v.Clone()
			continue
		}
		if _, ok := obsoleteFields[name]; ok {
			if !slices.Contains(o.obsolete, name) {
				o.obsolete = append(o.obsolete, name)
			}
			continue
		}
		i, ok := fieldIndex[name]
		if !ok {
			o.unknown = append(o.unknown, name)
			continue
		}
		o.seen[i] = true
		if msg := fields[i].decode(c, v); msg != "" {
			o.setTypeErr(i, name, msg)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing '}'
		return o, jsonError(data, err)
	}
	end := dec.InputOffset()
	if _, err := dec.ReadValue(); err != io.EOF {
		if err == nil {
			return o, syntaxError(data, skipSpace(data, end), "", "config holds more than one JSON value, expected one object")
		}
		return o, jsonError(data, err)
	}
	if alias != nil {
		i := fieldIndex["keep_purge_control_calls"]
		if o.seen[i] {
			o.both = true
		} else {
			o.seen[i], o.aliased = true, true
			if msg := fields[i].decode(c, alias); msg != "" {
				o.setTypeErr(i, aliasPurgeControl, msg)
			}
		}
	}
	return o, nil
}

// setTypeErr records a type error for the field at index i, reported under name.
func (o *overlay) setTypeErr(i int, name, msg string) {
	if o.typeErrs == nil {
		o.typeErrs = make(map[int]FieldError)
	}
	o.typeErrs[i] = FieldError{Field: name, Message: msg}
}

// Decode reads a config file's contents. It starts from [Default] and sets
// each field that data holds, so fields missing from data keep their
// defaults. It returns the config, the JSON names of the fields that were
// missing and got their defaults (in field order; nil if none), and an
// error.
//
// Each added field of a valid config is logged at Info level as, for
// example, "Config upgraded: added field keep_recent with default 3", with
// the attributes field and default (the default in JSON); a config that
// fails validation logs no upgrade. Decode never writes:
// a caller that wants the upgraded config on disk passes it to [Save].
// The first design's name keep_restore_remote_calls is read as
// keep_purge_control_calls (which wins if both are present). Names that
// Decode does not know are ignored and logged at Warn level, because a
// newer BrainSurgeon may have written them. A nil log discards.
//
// If data is not a single JSON object, Decode returns the zero Config, nil
// and a *SyntaxError (wrapping brainsurgeon.ErrInvalid) that says at which
// line and column, and what was expected and found. Otherwise a field holding
// the wrong JSON type (for example "keep_recent": "3") and every field that
// fails [Config.Validate] are reported together in a *ValidationError; in
// that case Decode still returns the decoded config, in which each field of
// the wrong type holds its default, so that a caller can show or repair it.
func Decode(data []byte, log brainsurgeon.Logger) (Config, []string, error) {
	c, added, _, err := decode(data, log)
	return c, added, err
}

// decode is Decode that also returns what the data held that is not a
// field: the unknown and the obsolete names, in input order.
func decode(data []byte, log brainsurgeon.Logger) (c Config, added []string, o overlay, err error) {
	log = brainsurgeon.LoggerOrDiscard(log)
	c = Default()
	o, err = c.apply(data)
	if err != nil {
		return Config{}, nil, overlay{}, err
	}
	for _, name := range o.unknown {
		log.Warn(fmt.Sprintf("Config has unknown field %s; it is ignored and will not be kept when the config is saved", name), "field", name)
	}
	if o.both {
		log.Warn("Config has both keep_purge_control_calls and "+aliasPurgeControl+"; using keep_purge_control_calls",
			"field", "keep_purge_control_calls", "old_field", aliasPurgeControl)
	}
	for i, f := range fields {
		if !o.seen[i] {
			added = append(added, f.name)
		}
	}
	if err := c.problems(o.typeErrs, nil); err != nil {
		// A config that is refused is not upgraded: nothing is logged
		// as added, renamed or dropped.
		return c, added, o, err
	}
	for _, name := range o.obsolete {
		log.Info(fmt.Sprintf("Config upgraded: obsolete field %s is ignored and removed when the config is saved (%s)", name, obsoleteFields[name]),
			"field", name)
	}
	if o.aliased {
		log.Info("Config upgraded: renamed field "+aliasPurgeControl+" to keep_purge_control_calls",
			"field", "keep_purge_control_calls", "old_field", aliasPurgeControl)
	}
	for _, name := range added {
		def := showJSON(fields[fieldIndex[name]].get(&c))
		log.Info(fmt.Sprintf("Config upgraded: added field %s with default %s", name, def), "field", name, "default", def)
	}
	return c, added, o, nil
}

// NearestField returns the field name closest to name by edit distance
// (ignoring case), for a "did you mean" hint, or "" when no field is
// close: at most 2 edits, or a third of name's length for a long name.
func NearestField(name string) string {
	best, bestD := "", max(2, len(name)/3)+1
	for _, f := range fields {
		if d := editDistance(strings.ToLower(name), f.name); d < bestD {
			best, bestD = f.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Merge applies patch, a JSON object holding some of the config's fields
// (the body of POST /api/config), to c and validates the result. Fields
// absent from patch keep their values; null is accepted only for
// last_run_at and last_retention_run_at, and clears them. The first
// design's name keep_restore_remote_calls is accepted for
// keep_purge_control_calls (which wins if both are present).
//
// If patch is not a single JSON object, Merge returns an error wrapping
// brainsurgeon.ErrInvalid. Unknown fields, fields of the wrong JSON type
// and fields that fail [Config.Validate] are reported together in a
// *ValidationError; an unknown field's message lists the allowed names. On
// any error c is left unchanged. c must not be nil.
func (c *Config) Merge(patch []byte) error {
	if c == nil {
		return fmt.Errorf("merge config: nil *Config: %w", brainsurgeon.ErrInvalid)
	}
	n := *c // apply replaces TriggerTypes whole, so sharing it is safe
	o, err := n.apply(patch)
	if err != nil {
		return err
	}
	var extra []FieldError
	for _, name := range o.obsolete {
		extra = append(extra, FieldError{Field: name, Message: "obsolete field, " + obsoleteFields[name]})
	}
	for _, name := range o.unknown {
		extra = append(extra, FieldError{Field: name, Message: "unknown field (allowed: " + strings.Join(FieldNames(), ", ") + ")"})
	}
	if err := n.problems(o.typeErrs, extra); err != nil {
		return err
	}
	*c = n
	return nil
}

// showJSON renders v as compact JSON for a log message.
func showJSON(v any) string {
	if tt, ok := v.([]string); ok && tt == nil {
		return "[]"
	}
	b, err := marshal(v, "")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// decodeBool reads a JSON boolean into *dst.
func decodeBool(v jsontext.Value, dst *bool) string {
	switch v.Kind() {
	case 't':
		*dst = true
	case 'f':
		*dst = false
	default:
		return "expected true or false, got " + describe(v)
	}
	return ""
}

// decodeInt reads a JSON number with an integral value, such as 3, 3.0 or
// 1e3, into *dst.
func decodeInt(v jsontext.Value, dst *int) string {
	if v.Kind() != '0' {
		return "expected an integer, got " + describe(v)
	}
	s := string(v)
	if n, err := strconv.ParseInt(s, 10, strconv.IntSize); err == nil {
		*dst = int(n)
		return ""
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && f == math.Trunc(f) && f >= math.MinInt && f < math.MaxInt:
		*dst = int(f)
		return ""
	case err == nil && f != math.Trunc(f):
		return "expected an integer, got " + s
	}
	return "expected an integer, got " + s + ", which is too large"
}

// decodeFloat reads a JSON number into *dst.
func decodeFloat(v jsontext.Value, dst *float64) string {
	if v.Kind() != '0' {
		return "expected a number, got " + describe(v)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return "expected a number, got " + string(v) + ", which is too large"
	}
	*dst = f
	return ""
}

// decodeString reads a JSON string into *dst.
func decodeString(v jsontext.Value, dst *string) string {
	if v.Kind() != '"' {
		return "expected a string, got " + describe(v)
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return "expected a string, got " + describe(v)
	}
	*dst = string(s)
	return ""
}

// decodeStrings reads a JSON array of strings into *dst.
func decodeStrings(v jsontext.Value, dst *[]string) string {
	if v.Kind() != '[' {
		return "expected an array of strings, got " + describe(v)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadToken(); err != nil {
		return "expected an array of strings, got " + describe(v)
	}
	out := []string{}
	for i := 0; dec.PeekKind() != ']'; i++ {
		e, err := dec.ReadValue()
		if err != nil {
			return "expected an array of strings, got " + describe(v)
		}
		var s string
		if msg := decodeString(e, &s); msg != "" {
			return fmt.Sprintf("expected an array of strings, got %s at index %d", describe(e), i)
		}
		out = append(out, s)
	}
	*dst = out
	return ""
}

// decodeTime reads null or an RFC 3339 timestamp string into *dst.
func decodeTime(v jsontext.Value, dst **time.Time) string {
	const want = `expected null or an RFC 3339 timestamp such as "2026-02-20T17:30:00Z", got `
	switch v.Kind() {
	case 'n':
		*dst = nil
		return ""
	case '"':
		var s string
		if msg := decodeString(v, &s); msg != "" {
			return want + describe(v)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return want + describe(v)
		}
		*dst = &t
		return ""
	}
	return want + describe(v)
}

// describe names a JSON value for an error message: its text for literals,
// numbers and short strings, its kind otherwise.
func describe(v jsontext.Value) string {
	switch k := v.Kind(); k {
	case '"':
		s, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return "a string"
		}
		const max = 40
		if utf8.RuneCount(s) > max {
			r := []rune(string(s))
			return "a string (" + strconv.Quote(string(r[:max])+"…") + ")"
		}
		return "a string (" + strconv.Quote(string(s)) + ")"
	case 'n', 't', 'f', '0':
		s := string(bytes.TrimSpace(v))
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return s
	default:
		return jsonedit.KindName(k)
	}
}
