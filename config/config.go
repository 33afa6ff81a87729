package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adhocore/gronx"

	"github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/duration"
)

// Dir is the name of the directory, beside the agents directory, that holds
// BrainSurgeon's own files.
const Dir = ".brainsurgeon"

// FileName is the name of the config file inside [Dir].
const FileName = "config.json"

// MaxPreviewChars is the largest accepted value of Config.PreviewChars.
const MaxPreviewChars = 10000

// MinSourceOffloadAboveChars is the smallest accepted value of
// Config.SourceOffloadAboveChars.
const MinSourceOffloadAboveChars = 1000

// Retention scopes, the values accepted for Config.RetentionScope.
const (
	// ScopeAll lets retention delete every extracted value older than the
	// retention period, even one that a placeholder still points to.
	ScopeAll = "all"
	// ScopeOrphans lets retention delete only the values that no live
	// placeholder points to any more.
	ScopeOrphans = "orphans"
)

// Trigger types, the values accepted in Config.TriggerTypes: the root
// package's trigger types as strings.
const (
	// TriggerThinking selects assistant thinking blocks.
	TriggerThinking = string(brainsurgeon.TriggerThinking)
	// TriggerToolResult selects tool result text and details and bash
	// execution output.
	TriggerToolResult = string(brainsurgeon.TriggerToolResult)
	// TriggerToolCall selects long string arguments of tool calls.
	TriggerToolCall = string(brainsurgeon.TriggerToolCall)
	// TriggerImage selects whole image blocks.
	TriggerImage = string(brainsurgeon.TriggerImage)
	// TriggerAssistant selects the text of assistant messages.
	TriggerAssistant = string(brainsurgeon.TriggerAssistant)
	// TriggerUser selects the text of user messages.
	TriggerUser = string(brainsurgeon.TriggerUser)
	// TriggerSystem selects the text of system and custom messages.
	TriggerSystem = string(brainsurgeon.TriggerSystem)
)

// TriggerTypes returns every trigger type that Config.TriggerTypes may
// hold, in the root package's order (brainsurgeon.TriggerTypes). The
// caller owns the returned slice.
func TriggerTypes() []string {
	all := brainsurgeon.TriggerTypes()
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = string(t)
	}
	return out
}

// Config is the runtime configuration of smart pruning, as stored in the
// config file. The JSON name of each field is given by its tag; the file
// lists the fields in the order below. The zero Config is not valid: start
// from [Default].
type Config struct {
	// Enabled is the master switch of automatic pruning. It defaults to
	// false: nothing rewrites a user's files until they opt in (the first
	// design's default of true is not followed).
	Enabled bool `json:"enabled"`
	// KeepRecent is how many messages (entries that reach the model, on the
	// active path, counted from the end) are never extracted. It defaults to
	// 3 and must be 0 or more.
	KeepRecent int `json:"keep_recent"`
	// MinValueLength is the length in bytes below which a value is not
	// extracted: bytes of the value's JSON text as the transcript stores
	// it, without the quotes (escapes count as written, so "\n" is 2);
	// an image block counts whole. It defaults to 500 and must be 1 or
	// more.
	MinValueLength int `json:"min_value_length"`
	// TriggerTypes lists the kinds of values that may be extracted; see
	// [TriggerTypes] for the allowed ones. It defaults to thinking and
	// tool_result. An empty list is valid and extracts nothing.
	TriggerTypes []string `json:"trigger_types"`
	// AgeThresholdHours protects entries younger than this many hours from
	// extraction; 0 means no protection by age. It defaults to 24 and must
	// be 0 or more.
	AgeThresholdHours float64 `json:"age_threshold_hours"`
	// AutoCron is the cron expression of automatic pruning runs. It
	// defaults to "*/2 * * * *" (every two minutes). Five to seven fields
	// (seconds and years optional) and tags such as "@daily" are accepted.
	AutoCron string `json:"auto_cron"`
	// Retention is how long extracted values are kept, as parsed by
	// [duration.Parse] (30m to 52w). It defaults to "24h".
	Retention string `json:"retention"`
	// RetentionCron is the cron expression of retention runs. It defaults
	// to "0 */6 * * *" (every six hours).
	RetentionCron string `json:"retention_cron"`
	// RetentionScope says which expired values retention may delete:
	// [ScopeAll] (the default) or [ScopeOrphans].
	RetentionScope string `json:"retention_scope"`
	// DoctorSchedule is the cron expression of the daemon's doctor report:
	// a diagnosis of every session and a scan of the host's leftovers,
	// logged (nothing is fixed or collected). It defaults to "17 3 * * *"
	// (daily at 03:17); "" disables the report.
	DoctorSchedule string `json:"doctor_schedule"`
	// KeepPurgeControlCalls keeps the agent's restore calls verbatim in the
	// transcript instead of redacting them. It defaults to false. When
	// decoding, the first design's name keep_restore_remote_calls is
	// accepted as well.
	KeepPurgeControlCalls bool `json:"keep_purge_control_calls"`
	// KeepAfterRestoreSeconds protects a restored entry from being
	// extracted again for this many seconds. It defaults to 600 and must be
	// 0 or more.
	KeepAfterRestoreSeconds int `json:"keep_after_restore_seconds"`
	// IdleSeconds is how long a session must have been left alone before it
	// is edited: longer than the usual prompt-cache lifetime, so an edit
	// does not make the next turn re-bill a cached prefix, and long enough
	// that a run starting is not mistaken for an idle session. It defaults
	// to 300 and must be 0 or more.
	IdleSeconds int `json:"idle_seconds"`
	// MinSavingTokens is the smallest saving, in tokens, for which a pruning
	// pass edits a session: a smaller edit would cost the provider's prompt
	// cache more than it saves. It defaults to 2000 and must be 0 or more.
	MinSavingTokens int `json:"min_saving_tokens"`
	// PreviewChars is how many characters of an extracted value are kept
	// before its placeholder; 0 (the default) keeps none. It must be
	// between 0 and [MaxPreviewChars].
	PreviewChars int `json:"preview_chars"`
	// SourceOffloadAboveChars is the length, in characters (code points)
	// of a tool result's text blocks, above which the OpenClaw plugin
	// stores the result at the source (POST /api/plugin/v1/source) and
	// the transcript gets a placeholder instead. The plugin learns it from
	// the daemon. It defaults to 40000 and must be
	// [MinSourceOffloadAboveChars] or more.
	SourceOffloadAboveChars int `json:"source_offload_above_chars"`
	// SourcePreviewChars is how many characters of a result stored at the
	// source its placeholder shows at the start and at the end, each (at
	// most a quarter of the text); 0 shows none. It defaults to 400 and
	// must be between 0 and [MaxPreviewChars].
	SourcePreviewChars int `json:"source_preview_chars"`
	// SideStore is where extracted values are kept: "" or "local" (the
	// default) is the pack store beside the transcripts; an s3:// URL is an
	// S3-compatible object store, as sides3.Parse reads it:
	// "s3://bucket/prefix?endpoint=https://host&region=r". Credentials
	// never go here: they come from the environment or ~/.aws. The values
	// move between stores only with `brainsurgeon side migrate`, which
	// changes this setting when every value has arrived.
	SideStore string `json:"side_store"`
	// Compaction holds the layered compaction's thresholds and the
	// summarizer's settings; see [DefaultCompaction] for the defaults.
	// Members missing from the file get their defaults.
	Compaction Compaction `json:"compaction"`
	// LastRunAt is when the last automatic pruning run finished, or nil
	// (the default) if none has.
	LastRunAt *time.Time `json:"last_run_at"`
	// LastRetentionRunAt is when the last retention run finished, or nil
	// (the default) if none has.
	LastRetentionRunAt *time.Time `json:"last_retention_run_at"`
}

// DefaultDoctorSchedule is the default of Config.DoctorSchedule: daily at
// 03:17, off the full hour when other jobs tend to run.
const DefaultDoctorSchedule = "17 3 * * *"

// Default returns the default configuration. Each call returns a new
// TriggerTypes slice, which the caller owns.
func Default() Config {
	return Config{
		Enabled:                 false,
		KeepRecent:              3,
		MinValueLength:          500,
		TriggerTypes:            []string{TriggerThinking, TriggerToolResult},
		AgeThresholdHours:       24,
		AutoCron:                "*/2 * * * *",
		Retention:               "24h",
		RetentionCron:           "0 */6 * * *",
		RetentionScope:          ScopeAll,
		DoctorSchedule:          DefaultDoctorSchedule,
		KeepPurgeControlCalls:   false,
		KeepAfterRestoreSeconds: 600,
		IdleSeconds:             300,
		MinSavingTokens:         2000,
		PreviewChars:            0,
		SourceOffloadAboveChars: 40000,
		SourcePreviewChars:      400,
		SideStore:               SideStoreLocal,
		Compaction:              DefaultCompaction(),
	}
}

// Path returns the path of the config file that belongs to the agents
// directory agentsDir: ".brainsurgeon/config.json" in the parent of
// agentsDir. A trailing separator on agentsDir is ignored. Path does no
// I/O and does not check agentsDir.
func Path(agentsDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(agentsDir)), Dir, FileName)
}

// StateDir returns BrainSurgeon's state dir for an agents dir (or a
// ~/.openclaw dir holding "agents"): "<agents dir>/../.brainsurgeon", the
// sibling of "agents" where config.json lives too. It makes agentsDir
// absolute and looks whether it holds an "agents" directory.
func StateDir(agentsDir string) string {
	abs, err := filepath.Abs(agentsDir)
	if err != nil {
		abs = agentsDir
	}
	if fi, err := os.Stat(filepath.Join(abs, "agents")); err == nil && fi.IsDir() {
		return filepath.Join(abs, Dir)
	}
	return filepath.Join(filepath.Dir(abs), Dir)
}

// RetentionDuration returns Retention parsed by [duration.Parse]. The error,
// if any, wraps duration.ErrSyntax or duration.ErrRange.
func (c Config) RetentionDuration() (time.Duration, error) {
	d, err := duration.Parse(c.Retention)
	if err != nil {
		return 0, fmt.Errorf("retention: %w", err)
	}
	return d, nil
}

// KeepAfterRestore returns KeepAfterRestoreSeconds as a duration. A
// negative value gives 0; a value too large for a time.Duration gives the
// largest duration.
func (c Config) KeepAfterRestore() time.Duration { return seconds(c.KeepAfterRestoreSeconds) }

// Idle returns IdleSeconds as a duration. A negative value gives 0; a value
// too large for a time.Duration gives the largest duration.
func (c Config) Idle() time.Duration { return seconds(c.IdleSeconds) }

// AgeThreshold returns AgeThresholdHours as a duration, rounded down to
// the nanosecond; 0 means no protection by age. A negative or NaN value
// gives 0; a value too large for a time.Duration gives the largest
// duration.
func (c Config) AgeThreshold() time.Duration {
	h := c.AgeThresholdHours
	switch {
	case !(h > 0): // also NaN
		return 0
	case h*float64(time.Hour) >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(h * float64(time.Hour))
}

// HasTrigger reports whether TriggerTypes lists the trigger type t. The
// comparison is exact.
func (c Config) HasTrigger(t string) bool { return slices.Contains(c.TriggerTypes, t) }

// seconds converts n seconds to a duration, saturating instead of
// overflowing.
func seconds(n int) time.Duration {
	switch {
	case n <= 0:
		return 0
	case int64(n) > math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	}
	return time.Duration(n) * time.Second
}

// MarshalJSON encodes c as a JSON object with the fields in the documented
// order. A nil TriggerTypes is written as an empty list, never as null.
func (c Config) MarshalJSON() ([]byte, error) {
	return c.encode("")
}

// encode renders c as JSON, indented by indent when it is not empty, without
// a trailing newline.
func (c Config) encode(indent string) ([]byte, error) {
	type plain Config // drops the methods, so no recursion
	p := plain(c)
	if p.TriggerTypes == nil {
		p.TriggerTypes = []string{}
	}
	return marshal(p, indent)
}

// marshal encodes v as JSON without escaping '<', '>' and '&', indented by
// indent when it is not empty, without a trailing newline.
func marshal(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// FieldError describes one invalid field of a Config.
type FieldError struct {
	// Field is the JSON name of the field, such as "keep_recent". When an
	// unknown field is sent to Merge, it is that field's name.
	Field string
	// Message says what was expected and what was found, such as
	// "must be 0 or more, got -1".
	Message string
}

// Error returns "field: message".
func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// ValidationError reports every invalid field of a Config. It is returned by
// Validate, Decode, Load, Merge and Save (wrapped by the last two and by
// Load), and wraps [brainsurgeon.ErrInvalid].
type ValidationError struct {
	// Errors holds one FieldError per bad field, in field order, followed
	// by unknown fields sent to Merge in the order they were sent. It is
	// never empty.
	Errors []FieldError
}

// Error joins the field errors with "; ", as in
// "keep_recent: must be 0 or more, got -1; retention_scope: must be "all" or "orphans", got "none"".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns [brainsurgeon.ErrInvalid].
func (e *ValidationError) Unwrap() error { return brainsurgeon.ErrInvalid }

// Field returns the message about the field with the given JSON name and
// whether there is one.
func (e *ValidationError) Field(name string) (string, bool) {
	for _, fe := range e.Errors {
		if fe.Field == name {
			return fe.Message, true
		}
	}
	return "", false
}

// Validate checks every field of c. It returns nil if c is valid and
// otherwise a *ValidationError with one FieldError per bad field, in field
// order.
func (c Config) Validate() error {
	return c.problems(nil, nil)
}

// problems validates c. Fields that have an entry in typeErrs (indexed like
// fields) report that entry instead of being checked; extra errors go last.
func (c *Config) problems(typeErrs map[int]FieldError, extra []FieldError) error {
	var errs []FieldError
	for i, f := range fields {
		if te, ok := typeErrs[i]; ok {
			errs = append(errs, te)
			continue
		}
		if f.name == "compaction" {
			errs = append(errs, c.Compaction.problems()...)
			continue
		}
		if f.check == nil {
			continue
		}
		if msg := f.check(c); msg != "" {
			errs = append(errs, FieldError{Field: f.name, Message: msg})
		}
	}
	errs = append(errs, extra...)
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Errors: errs}
}

// atLeast returns the message for an integer below min, or "".
func atLeast(v, min int) string {
	if v < min {
		return fmt.Sprintf("must be %d or more, got %d", min, v)
	}
	return ""
}

// checkTriggers returns the message for unknown trigger types, or "".
func checkTriggers(types []string) string {
	allowed := TriggerTypes()
	var bad []string
	for _, t := range types {
		if !slices.Contains(allowed, t) {
			bad = append(bad, strconv.Quote(t))
		}
	}
	switch len(bad) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("unknown trigger type %s (allowed: %s)", bad[0], strings.Join(allowed, ", "))
	}
	return fmt.Sprintf("unknown trigger types %s (allowed: %s)", strings.Join(bad, ", "), strings.Join(allowed, ", "))
}

// checkCron returns the message for an invalid cron expression, or "".
func checkCron(expr, example string) string {
	if validCron(expr) {
		return ""
	}
	return fmt.Sprintf("must be a cron expression such as %q, got %q", example, expr)
}

// validCron reports whether gronx accepts expr. gronx checks the items of a
// comma-separated list only up to the first one that matches the current
// time, so "0,99 * * * *" would pass at minute 0; each item of a list is
// therefore also checked on its own, which makes the answer independent of
// the time of day.
func validCron(expr string) bool {
	g := gronx.New()
	if !g.IsValid(expr) {
		return false
	}
	segs, err := gronx.Segments(expr)
	if err != nil {
		return false
	}
	for i, seg := range segs {
		if !strings.Contains(seg, ",") {
			continue
		}
		for _, item := range strings.Split(seg, ",") {
			one := slices.Clone(segs)
			one[i] = item
			if !g.IsValid(strings.Join(one, " ")) {
				return false
			}
		}
	}
	return true
}

// formatFloat renders f the way JSON would.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// SideStoreLocal is the side_store value of the pack store beside the
// transcripts; "" means the same.
const SideStoreLocal = "local"

// IsLocalSideStore reports whether a side_store value names the pack
// store beside the transcripts ("" or "local").
func IsLocalSideStore(s string) bool { return s == "" || s == SideStoreLocal }

// checkSideStore returns the message for a side_store value that is
// neither the local pack store nor a valid s3:// URL, or "".
func checkSideStore(s string) string {
	if IsLocalSideStore(s) {
		return ""
	}
	if _, err := ParseS3(s); err != nil {
		return strings.TrimPrefix(strings.TrimSuffix(err.Error(), ": "+brainsurgeon.ErrInvalid.Error()), "side_store ")
	}
	return ""
}
