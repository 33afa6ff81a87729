package config_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// record is one log call seen by recorder.
type record struct {
	level, msg string
	args       []any
}

// recorder is a brainsurgeon.Logger that keeps every record.
type recorder struct {
	mu   sync.Mutex
	recs []record
}

func (r *recorder) add(level, msg string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, record{level, msg, args})
}

func (r *recorder) Debug(msg string, args ...any) { r.add("DEBUG", msg, args) }
func (r *recorder) Info(msg string, args ...any)  { r.add("INFO", msg, args) }
func (r *recorder) Warn(msg string, args ...any)  { r.add("WARN", msg, args) }
func (r *recorder) Error(msg string, args ...any) { r.add("ERROR", msg, args) }

// lines returns "LEVEL msg" for every record at level or above Info.
func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if rec.level != "DEBUG" {
			out = append(out, rec.level+" "+rec.msg)
		}
	}
	return out
}

var _ bs.Logger = (*recorder)(nil)

// fullJSON is a complete config file holding the defaults: the golden
// file Save writes, with trigger_types on one line (the cases below edit
// it by string replacement) and no final newline.
var fullJSON = func() string {
	s := strings.Replace(defaultFile, "[\n    \"thinking\",\n    \"tool_result\"\n  ]", `["thinking", "tool_result"]`, 1)
	if !strings.Contains(s, `"trigger_types": ["thinking", "tool_result"],`) {
		panic("testdata/default.json: trigger_types is not the default pair") // test setup
	}
	return strings.TrimSuffix(s, "\n")
}()

// compactionDefault is the default "compaction" object as the upgrade log
// shows it.
const compactionDefault = `{"auto_enabled":false,"context_window":200000,"prune_trigger_percent":80,"prune_min_tool_tokens":50000,"prune_protect_recent":40000,"summarize_trigger_percent":88,"summarize_keep_recent":25000,"full_trigger_percent":95,"warn_at":3,"hard_warn_at":5,"auto_quiet_seconds":300,"tokenizer":"calibrated","summarizer":{"base_url":"","model":"","temperature":0.2,"max_tokens":13107,"timeout_seconds":120,"retries":3}}`

// upgraded returns the log line for a field added by the upgrade.
func upgraded(field, def string) string {
	return fmt.Sprintf("INFO Config upgraded: added field %s with default %s", field, def)
}

func TestDecode(t *testing.T) {
	ranAt := time.Date(2026, 2, 20, 17, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		in        string
		modify    func(c *config.Config) // applied to Default() to get the wanted config
		wantAdded []string
		wantLogs  []string
	}{
		{
			name:   "Complete",
			in:     fullJSON,
			modify: func(c *config.Config) {},
		},
		{
			name:      "EmptyObjectGetsEveryDefault",
			in:        `{}`,
			modify:    func(c *config.Config) {},
			wantAdded: config.FieldNames(),
			wantLogs: []string{
				upgraded("enabled", "false"),
				upgraded("keep_recent", "3"),
				upgraded("min_value_length", "500"),
				upgraded("trigger_types", `["thinking","tool_result"]`),
				upgraded("age_threshold_hours", "24"),
				upgraded("auto_cron", `"*/2 * * * *"`),
				upgraded("retention", `"24h"`),
				upgraded("retention_cron", `"0 */6 * * *"`),
				upgraded("retention_scope", `"all"`),
				upgraded("doctor_schedule", `"17 3 * * *"`),
				upgraded("keep_purge_control_calls", "false"),
				upgraded("keep_after_restore_seconds", "600"),
				upgraded("idle_seconds", "300"),
				upgraded("min_saving_tokens", "2000"),
				upgraded("preview_chars", "0"),
				upgraded("source_offload_above_chars", "40000"),
				upgraded("source_preview_chars", "400"),
				upgraded("side_store", `"local"`),
				upgraded("compaction", compactionDefault),
				upgraded("last_run_at", "null"),
				upgraded("last_retention_run_at", "null"),
			},
		},
		{
			// The file of the first design (its SmartPruningConfig).
			name: "FirstDesignFile",
			in: `{"enabled":true,"trigger_types":["thinking"],"age_threshold_hours":48,
				"auto_cron":"*/5 * * * *","last_run_at":"2026-02-20T17:30:00.000Z",
				"retention":"7d","retention_cron":"0 */6 * * *","last_retention_run_at":null,
				"keep_restore_remote_calls":true,"keep_recent":5,"min_value_length":800,
				"scan_interval_seconds":30,"keep_after_restore_seconds":900}`,
			modify: func(c *config.Config) {
				c.Enabled = true
				c.TriggerTypes = []string{"thinking"}
				c.AgeThresholdHours = 48
				c.AutoCron = "*/5 * * * *"
				c.LastRunAt = &ranAt
				c.Retention = "7d"
				c.KeepPurgeControlCalls = true
				c.KeepRecent = 5
				c.MinValueLength = 800
				c.KeepAfterRestoreSeconds = 900
			},
			wantAdded: []string{"retention_scope", "doctor_schedule", "idle_seconds", "min_saving_tokens", "preview_chars", "source_offload_above_chars", "source_preview_chars", "side_store", "compaction"},
			wantLogs: []string{
				"INFO Config upgraded: obsolete field scan_interval_seconds is ignored and removed when the config is saved (nothing reads it: automatic pruning runs on the auto_cron schedule)",
				"INFO Config upgraded: renamed field keep_restore_remote_calls to keep_purge_control_calls",
				upgraded("retention_scope", `"all"`),
				upgraded("doctor_schedule", `"17 3 * * *"`),
				upgraded("idle_seconds", "300"),
				upgraded("min_saving_tokens", "2000"),
				upgraded("preview_chars", "0"),
				upgraded("source_offload_above_chars", "40000"),
				upgraded("source_preview_chars", "400"),
				upgraded("side_store", `"local"`),
				upgraded("compaction", compactionDefault),
			},
		},
		{
			name: "AliasLosesToNewName",
			in:   strings.Replace(fullJSON, `"enabled": false,`, `"enabled": false, "keep_restore_remote_calls": true,`, 1),
			modify: func(c *config.Config) {
				c.KeepPurgeControlCalls = false
			},
			wantLogs: []string{"WARN Config has both keep_purge_control_calls and keep_restore_remote_calls; using keep_purge_control_calls"},
		},
		{
			name:   "UnknownFieldsWarned",
			in:     strings.Replace(fullJSON, `"enabled": false,`, `"trigger_rules": [{"type": "thinking"}], "enabled": false, "future": 1,`, 1),
			modify: func(c *config.Config) {},
			wantLogs: []string{
				"WARN Config has unknown field trigger_rules; it is ignored and will not be kept when the config is saved",
				"WARN Config has unknown field future; it is ignored and will not be kept when the config is saved",
			},
		},
		{
			name: "IntegralNumbers",
			in:   strings.Replace(fullJSON, `"keep_recent": 3,`, `"keep_recent": 4.0,`, 1),
			modify: func(c *config.Config) {
				c.KeepRecent = 4
			},
		},
		{
			name: "ExponentAndEscapes",
			in: strings.NewReplacer(`"min_saving_tokens": 2000`, `"min_saving_tokens": 1e3`,
				`"auto_cron": "*/2 * * * *"`, `"auto_cron": "*\/3 * * * *"`).Replace(fullJSON),
			modify: func(c *config.Config) {
				c.MinSavingTokens = 1000
				c.AutoCron = "*/3 * * * *"
			},
		},
		{
			name:   "EmptyTriggerTypes",
			in:     strings.Replace(fullJSON, `["thinking", "tool_result"]`, `[]`, 1),
			modify: func(c *config.Config) { c.TriggerTypes = []string{} },
		},
		{
			name:   "ByteOrderMark",
			in:     "\ufeff" + fullJSON,
			modify: func(c *config.Config) {},
		},
		{
			name: "TimestampWithOffset",
			in:   strings.Replace(fullJSON, `"last_retention_run_at": null`, `"last_retention_run_at": "2026-02-20T18:30:00+01:00"`, 1),
			modify: func(c *config.Config) {
				at := time.Date(2026, 2, 20, 18, 30, 0, 0, time.FixedZone("", 3600))
				c.LastRetentionRunAt = &at
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log recorder
			got, added, err := config.Decode([]byte(tt.in), &log)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := config.Default()
			tt.modify(&want)
			if !sameConfig(got, want) {
				t.Errorf("Decode config:\n got %+v\nwant %+v", got, want)
			}
			if !slices.Equal(added, tt.wantAdded) {
				t.Errorf("Decode added = %q, want %q", added, tt.wantAdded)
			}
			if logs := log.lines(); !slices.Equal(logs, tt.wantLogs) {
				t.Errorf("logs:\n got %q\nwant %q", logs, tt.wantLogs)
			}
		})
	}
}

func TestDecodeUpgradeLogAttributes(t *testing.T) {
	var log recorder
	if _, _, err := config.Decode([]byte(`{"keep_recent": 3}`), &log); err != nil {
		t.Fatal(err)
	}
	want := record{"INFO", "Config upgraded: added field auto_cron with default \"*/2 * * * *\"",
		[]any{"field", "auto_cron", "default", `"*/2 * * * *"`}}
	if !slices.ContainsFunc(log.recs, func(r record) bool { return reflect.DeepEqual(r, want) }) {
		t.Errorf("no record %+v in %+v", want, log.recs)
	}
}

func TestDecodeNilLogger(t *testing.T) {
	if _, added, err := config.Decode([]byte(`{"x": 1}`), nil); err != nil || len(added) != len(config.FieldNames()) {
		t.Fatalf("Decode with nil logger = %q, %v", added, err)
	}
}

func TestDecodeFieldErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want []config.FieldError
	}{
		{"BoolAsString", `{"enabled": "yes"}`,
			[]config.FieldError{{"enabled", `expected true or false, got a string ("yes")`}}},
		{"IntAsString", `{"keep_recent": "3"}`,
			[]config.FieldError{{"keep_recent", `expected an integer, got a string ("3")`}}},
		{"IntWithFraction", `{"keep_recent": 3.5}`,
			[]config.FieldError{{"keep_recent", "expected an integer, got 3.5"}}},
		{"IntTooLarge", `{"idle_seconds": 1e30}`,
			[]config.FieldError{{"idle_seconds", "expected an integer, got 1e30, which is too large"}}},
		{"IntAsNull", `{"min_value_length": null}`,
			[]config.FieldError{{"min_value_length", "expected an integer, got null"}}},
		{"FloatAsBool", `{"age_threshold_hours": true}`,
			[]config.FieldError{{"age_threshold_hours", "expected a number, got true"}}},
		{"StringAsNumber", `{"retention": 24}`,
			[]config.FieldError{{"retention", "expected a string, got 24"}}},
		{"StringAsObject", `{"auto_cron": {"every": "2m"}}`,
			[]config.FieldError{{"auto_cron", "expected a string, got an object"}}},
		{"LongStringShortened", `{"keep_recent": "` + strings.Repeat("é", 50) + `"}`,
			[]config.FieldError{{"keep_recent", `expected an integer, got a string ("` + strings.Repeat("é", 40) + `…")`}}},
		{"TriggerTypesAsString", `{"trigger_types": "thinking"}`,
			[]config.FieldError{{"trigger_types", `expected an array of strings, got a string ("thinking")`}}},
		{"TriggerTypesWithNumber", `{"trigger_types": ["thinking", 7]}`,
			[]config.FieldError{{"trigger_types", "expected an array of strings, got 7 at index 1"}}},
		{"TriggerTypesNull", `{"trigger_types": null}`,
			[]config.FieldError{{"trigger_types", "expected an array of strings, got null"}}},
		{"TimeNotRFC3339", `{"last_run_at": "yesterday"}`,
			[]config.FieldError{{"last_run_at", `expected null or an RFC 3339 timestamp such as "2026-02-20T17:30:00Z", got a string ("yesterday")`}}},
		{"TimeAsNumber", `{"last_retention_run_at": 1771608600000}`,
			[]config.FieldError{{"last_retention_run_at", `expected null or an RFC 3339 timestamp such as "2026-02-20T17:30:00Z", got 1771608600000`}}},
		{"AliasWrongType", `{"keep_restore_remote_calls": "no"}`,
			[]config.FieldError{{"keep_restore_remote_calls", `expected true or false, got a string ("no")`}}},
		{"InvalidValue", `{"retention": "5x"}`,
			[]config.FieldError{{"retention", "Invalid duration '5x'. Use m, h, d, or w"}}},
		{"TypeAndValueErrorsInFieldOrder", `{"preview_chars": -1, "retention": "5x", "keep_recent": "x", "trigger_types": ["reasoning"]}`,
			[]config.FieldError{
				{"keep_recent", `expected an integer, got a string ("x")`},
				{"trigger_types", `unknown trigger type "reasoning" ` + allowed},
				{"retention", "Invalid duration '5x'. Use m, h, d, or w"},
				{"preview_chars", "must be between 0 and 10000, got -1"},
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log recorder
			got, added, err := config.Decode([]byte(tt.in), &log)
			var ve *config.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Decode error = %v (%T), want a *ValidationError", err, err)
			}
			if !reflect.DeepEqual(ve.Errors, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", ve.Errors, tt.want)
			}
			if !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("error %v does not wrap brainsurgeon.ErrInvalid", err)
			}
			// The decoded config is returned; fields of the wrong type hold
			// their defaults.
			if len(added) == 0 || got.AutoCron == "" {
				t.Errorf("Decode returned %+v, %q; want the decoded config and the added fields", got, added)
			}
			if strings.Contains(tt.in, `"keep_recent": "`) && got.KeepRecent != 3 {
				t.Errorf("KeepRecent = %d, want the default 3", got.KeepRecent)
			}
		})
	}
}

func TestDecodeNotAnObject(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"Empty", ``, "config is empty, expected a JSON object"},
		{"WhiteSpace", " \n\t", "config is empty, expected a JSON object"},
		{"Array", `[]`, "config must be a JSON object, got an array"},
		{"Null", `null`, "config must be a JSON object, got null"},
		{"String", `"enabled"`, "config must be a JSON object, got a string"},
		{"Truncated", `{"enabled": true,`, "config is not valid JSON"},
		{"BadToken", `{"enabled": yes}`, "config is not valid JSON"},
		{"DuplicateName", `{"keep_recent": 1, "keep_recent": 2}`, "config is not valid JSON"},
		{"TwoValues", `{} {}`, "config holds more than one JSON value"},
		{"TrailingGarbage", `{} x`, "config is not valid JSON"},
		{"InvalidUTF8", "{\"retention\": \"\xff\"}", "config is not valid JSON"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, added, err := config.Decode([]byte(tt.in), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error = %v, want one containing %q", err, tt.want)
			}
			if !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("error %v does not wrap brainsurgeon.ErrInvalid", err)
			}
			var ve *config.ValidationError
			if errors.As(err, &ve) {
				t.Errorf("error is a *ValidationError, want a plain error")
			}
			if !reflect.DeepEqual(got, config.Config{}) || added != nil {
				t.Errorf("Decode returned %+v, %q; want the zero Config and nil", got, added)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	ranAt := time.Date(2026, 2, 20, 17, 30, 0, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		patch   string
		modify  func(c *config.Config) // applied to the start config to get the wanted one
		wantErr []config.FieldError    // nil means success
		errText string                 // for errors that are not a *ValidationError
	}{
		{"SeedExample", `{"enabled":true,"age_threshold_hours":48}`,
			func(c *config.Config) { c.Enabled = true; c.AgeThresholdHours = 48 }, nil, ""},
		{"EmptyObject", `{}`, func(c *config.Config) {}, nil, ""},
		{"EveryKind", `{"trigger_types":["image"],"retention":"2d","retention_scope":"orphans","preview_chars":80}`,
			func(c *config.Config) {
				c.TriggerTypes = []string{"image"}
				c.Retention = "2d"
				c.RetentionScope = "orphans"
				c.PreviewChars = 80
			}, nil, ""},
		{"Alias", `{"keep_restore_remote_calls":true}`,
			func(c *config.Config) { c.KeepPurgeControlCalls = true }, nil, ""},
		{"NewNameWinsOverAlias", `{"keep_restore_remote_calls":true,"keep_purge_control_calls":false}`,
			func(c *config.Config) {}, nil, ""},
		{"ClearTimestamp", `{"last_run_at":null}`,
			func(c *config.Config) { c.LastRunAt = nil }, nil, ""},
		{"SetTimestamp", `{"last_retention_run_at":"2026-02-20T17:30:00Z"}`,
			func(c *config.Config) { c.LastRetentionRunAt = &ranAt }, nil, ""},

		{"UnknownField", `{"enabled":true,"keep_chars":75}`, nil,
			[]config.FieldError{{"keep_chars", "unknown field (allowed: " + strings.Join(config.FieldNames(), ", ") + ")"}}, ""},
		{"InvalidValue", `{"enabled":true,"keep_recent":-2}`, nil,
			[]config.FieldError{{"keep_recent", "must be 0 or more, got -2"}}, ""},
		{"WrongType", `{"idle_seconds":"30"}`, nil,
			[]config.FieldError{{"idle_seconds", `expected an integer, got a string ("30")`}}, ""},
		{"ObsoleteField", `{"enabled":true,"scan_interval_seconds":30}`, nil,
			[]config.FieldError{{"scan_interval_seconds", "obsolete field, nothing reads it: automatic pruning runs on the auto_cron schedule"}}, ""},
		{"NullForPlainField", `{"auto_cron":null}`, nil,
			[]config.FieldError{{"auto_cron", "expected a string, got null"}}, ""},
		{"SeveralProblems", `{"zzz":1,"retention":"1s","enabled":1,"aaa":2}`, nil,
			[]config.FieldError{
				{"enabled", "expected true or false, got 1"},
				{"retention", "Invalid duration '1s'. Use m, h, d, or w"},
				{"zzz", "unknown field (allowed: " + strings.Join(config.FieldNames(), ", ") + ")"},
				{"aaa", "unknown field (allowed: " + strings.Join(config.FieldNames(), ", ") + ")"},
			}, ""},
		{"NotAnObject", `[{"enabled":true}]`, nil, nil, "config must be a JSON object, got an array"},
		{"Malformed", `{"enabled":`, nil, nil, "config is not valid JSON"},
		{"Empty", ``, nil, nil, "config is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := config.Default()
			start.LastRunAt = &ranAt
			c := start
			err := c.Merge([]byte(tt.patch))
			if tt.modify != nil {
				if err != nil {
					t.Fatalf("Merge: %v", err)
				}
				want := start
				tt.modify(&want)
				if !sameConfig(c, want) {
					t.Errorf("Merge result:\n got %+v\nwant %+v", c, want)
				}
				return
			}
			if !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("Merge error = %v, want one wrapping brainsurgeon.ErrInvalid", err)
			}
			var ve *config.ValidationError
			switch {
			case tt.wantErr != nil && !errors.As(err, &ve):
				t.Errorf("Merge error = %v (%T), want a *ValidationError", err, err)
			case tt.wantErr != nil && !reflect.DeepEqual(ve.Errors, tt.wantErr):
				t.Errorf("errors:\n got %q\nwant %q", ve.Errors, tt.wantErr)
			case tt.wantErr == nil && !strings.Contains(err.Error(), tt.errText):
				t.Errorf("Merge error = %v, want one containing %q", err, tt.errText)
			}
			if !sameConfig(c, start) {
				t.Errorf("a failed Merge changed the config:\n got %+v\nwant %+v", c, start)
			}
		})
	}
}

func TestMergeDoesNotShareTriggerTypesBackwards(t *testing.T) {
	c := config.Default()
	old := c.TriggerTypes
	if err := c.Merge([]byte(`{"trigger_types":["user"]}`)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(old, []string{"thinking", "tool_result"}) {
		t.Errorf("Merge changed the old TriggerTypes slice in place: %q", old)
	}
}

func TestMergeNil(t *testing.T) {
	var c *config.Config
	if err := c.Merge([]byte(`{}`)); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("Merge on nil = %v, want an error wrapping brainsurgeon.ErrInvalid", err)
	}
}

// sameConfig compares two configs, with timestamps compared by instant and
// offset.
func sameConfig(a, b config.Config) bool {
	if !sameTime(a.LastRunAt, b.LastRunAt) || !sameTime(a.LastRetentionRunAt, b.LastRetentionRunAt) {
		return false
	}
	a.LastRunAt, b.LastRunAt = nil, nil
	a.LastRetentionRunAt, b.LastRetentionRunAt = nil, nil
	return reflect.DeepEqual(a, b)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	_, oa := a.Zone()
	_, ob := b.Zone()
	return a.Equal(*b) && oa == ob
}

// TestSyntaxErrorPosition checks that a config that is not one JSON
// object is reported at its line and column (characters, 1-based), with
// what was expected and what was found.
func TestSyntaxErrorPosition(t *testing.T) {
	for _, tt := range []struct {
		name, in  string
		line, col int
		want      string
	}{
		{"BadLiteral", "{\"enabled\": thue}", 1, 14, `line 1, column 14: config is not valid JSON: invalid character 'h' in literal true (expecting 'r') (in the value of "enabled")`},
		{"SecondLine", "{\n  \"enabled\": tru}", 2, 17, `invalid character '}' in literal true (expecting 'e')`},
		{"AfterNonASCII", "{\"trigger_types\": [\"é\",]}", 1, 24, "line 1, column 24: config is not valid JSON"},
		{"MissingComma", "{\n\"enabled\": true\n\"keep_recent\": 3}", 3, 1, "config is not valid JSON"},
		{"Truncated", "{\"enabled\": true,\n", 2, 1, "the text ends in the middle of a value"},
		{"Empty", "\n\n", 3, 1, "config is empty, expected a JSON object"},
		{"Array", "\n  []", 2, 3, "config must be a JSON object, got an array"},
		{"TwoValues", "{}\n {}", 2, 2, "config holds more than one JSON value, expected one object"},
		{"BOM", "\xef\xbb\xbf{\"enabled\": x}", 1, 13, "invalid character 'x'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := config.Decode([]byte(tt.in), nil)
			var se *config.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Decode error = %v (%T), want a *SyntaxError", err, err)
			}
			if se.Line != tt.line || se.Column != tt.col {
				t.Errorf("at line %d, column %d, want %d, %d (%v)", se.Line, se.Column, tt.line, tt.col, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("error %v does not wrap brainsurgeon.ErrInvalid", err)
			}
		})
	}
}
