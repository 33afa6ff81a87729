package config_test

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/duration"
)

const allowed = "(allowed: thinking, tool_result, tool_call, image, assistant, user, system)"

func TestDefault(t *testing.T) {
	c := config.Default()
	want := config.Config{
		Enabled:                 false,
		KeepRecent:              3,
		MinValueLength:          500,
		TriggerTypes:            []string{"thinking", "tool_result"},
		AgeThresholdHours:       24,
		AutoCron:                "*/2 * * * *",
		Retention:               "24h",
		RetentionCron:           "0 */6 * * *",
		RetentionScope:          "all",
		DoctorSchedule:          "17 3 * * *",
		KeepPurgeControlCalls:   false,
		KeepAfterRestoreSeconds: 600,
		IdleSeconds:             300,
		MinSavingTokens:         2000,
		PreviewChars:            0,
		SourceOffloadAboveChars: 40000,
		SourcePreviewChars:      400,
		SideStore:               "local",
		Compaction:              config.DefaultCompaction(),
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("Default() = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
	c.TriggerTypes[0] = "changed"
	if got := config.Default().TriggerTypes[0]; got != "thinking" {
		t.Errorf("changing one Default's TriggerTypes changed the next one: %q", got)
	}
}

func TestPath(t *testing.T) {
	for _, tt := range []struct {
		name, agentsDir, want string
	}{
		{"Absolute", "/home/u/.openclaw/agents", "/home/u/.openclaw/.brainsurgeon/config.json"},
		{"TrailingSlash", "/home/u/.openclaw/agents/", "/home/u/.openclaw/.brainsurgeon/config.json"},
		{"Relative", "data/agents", "data/.brainsurgeon/config.json"},
		{"RelativeSingle", "agents", ".brainsurgeon/config.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := config.Path(tt.agentsDir); got != filepath.FromSlash(tt.want) {
				t.Errorf("Path(%q) = %q, want %q", tt.agentsDir, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		modify func(c *config.Config)
		want   []config.FieldError // nil means valid
	}{
		{"DefaultIsValid", func(c *config.Config) {}, nil},
		{"DoctorScheduleDisabled", func(c *config.Config) { c.DoctorSchedule = "" }, nil},
		{"DoctorScheduleTag", func(c *config.Config) { c.DoctorSchedule = "@weekly" }, nil},
		{"LowestValues", func(c *config.Config) {
			c.KeepRecent, c.MinValueLength, c.AgeThresholdHours = 0, 1, 0
			c.KeepAfterRestoreSeconds, c.IdleSeconds, c.MinSavingTokens, c.PreviewChars = 0, 0, 0, 0
			c.SourceOffloadAboveChars, c.SourcePreviewChars = 1000, 0
			c.TriggerTypes = nil
			c.Retention = "30m"
		}, nil},
		{"HighestValues", func(c *config.Config) {
			c.PreviewChars, c.SourcePreviewChars = 10000, 10000
			c.Retention = "52w"
			c.AgeThresholdHours = 1e6
			c.TriggerTypes = config.TriggerTypes()
		}, nil},
		{"OtherAcceptedValues", func(c *config.Config) {
			c.TriggerTypes = []string{"image", "tool_call", "image"}
			c.Retention = "1d12h"
			c.RetentionScope = "orphans"
			c.AutoCron = "@daily"
			c.RetentionCron = "30 0 */6 * * *" // with seconds
		}, nil},
		{"EmptyTriggerTypes", func(c *config.Config) { c.TriggerTypes = []string{} }, nil},

		{"KeepRecentNegative", func(c *config.Config) { c.KeepRecent = -1 },
			[]config.FieldError{{"keep_recent", "must be 0 or more, got -1"}}},
		{"MinValueLengthZero", func(c *config.Config) { c.MinValueLength = 0 },
			[]config.FieldError{{"min_value_length", "must be 1 byte or more, got 0"}}},
		{"MinValueLengthNegative", func(c *config.Config) { c.MinValueLength = -5 },
			[]config.FieldError{{"min_value_length", "must be 1 byte or more, got -5"}}},
		{"TriggerTypeUnknown", func(c *config.Config) { c.TriggerTypes = []string{"thinking", "tool_output"} },
			[]config.FieldError{{"trigger_types", `unknown trigger type "tool_output" ` + allowed}}},
		{"TriggerTypesUnknownSeveral", func(c *config.Config) { c.TriggerTypes = []string{"Thinking", "", "user"} },
			[]config.FieldError{{"trigger_types", `unknown trigger types "Thinking", "" ` + allowed}}},
		{"AgeThresholdNegative", func(c *config.Config) { c.AgeThresholdHours = -0.5 },
			[]config.FieldError{{"age_threshold_hours", "must be 0 or more, got -0.5"}}},
		{"AgeThresholdNaN", func(c *config.Config) { c.AgeThresholdHours = math.NaN() },
			[]config.FieldError{{"age_threshold_hours", "must be a finite number of hours, got NaN"}}},
		{"AgeThresholdInfinite", func(c *config.Config) { c.AgeThresholdHours = math.Inf(1) },
			[]config.FieldError{{"age_threshold_hours", "must be a finite number of hours, got +Inf"}}},
		{"AutoCronOutOfRange", func(c *config.Config) { c.AutoCron = "61 * * * *" },
			[]config.FieldError{{"auto_cron", `must be a cron expression such as "*/2 * * * *", got "61 * * * *"`}}},
		{"AutoCronBadListItem", func(c *config.Config) { c.AutoCron = "0,99 * * * *" },
			[]config.FieldError{{"auto_cron", `must be a cron expression such as "*/2 * * * *", got "0,99 * * * *"`}}},
		{"AutoCronEmpty", func(c *config.Config) { c.AutoCron = "" },
			[]config.FieldError{{"auto_cron", `must be a cron expression such as "*/2 * * * *", got ""`}}},
		{"AutoCronWords", func(c *config.Config) { c.AutoCron = "every 2 minutes" },
			[]config.FieldError{{"auto_cron", `must be a cron expression such as "*/2 * * * *", got "every 2 minutes"`}}},
		{"AutoCronZeroStep", func(c *config.Config) { c.AutoCron = "*/0 * * * *" },
			[]config.FieldError{{"auto_cron", `must be a cron expression such as "*/2 * * * *", got "*/0 * * * *"`}}},
		{"RetentionSyntax", func(c *config.Config) { c.Retention = "5x" },
			[]config.FieldError{{"retention", "Invalid duration '5x'. Use m, h, d, or w"}}},
		{"RetentionEmpty", func(c *config.Config) { c.Retention = "" },
			[]config.FieldError{{"retention", "Invalid duration ''. Use m, h, d, or w"}}},
		{"RetentionTooShort", func(c *config.Config) { c.Retention = "10m" },
			[]config.FieldError{{"retention", "Duration '10m' is too short: the minimum is 30m"}}},
		{"RetentionTooLong", func(c *config.Config) { c.Retention = "53w" },
			[]config.FieldError{{"retention", "Duration '53w' is too long: the maximum is 52w"}}},
		{"RetentionCronTooFewFields", func(c *config.Config) { c.RetentionCron = "0 */6 * *" },
			[]config.FieldError{{"retention_cron", `must be a cron expression such as "0 */6 * * *", got "0 */6 * *"`}}},
		{"RetentionScopeUnknown", func(c *config.Config) { c.RetentionScope = "referenced" },
			[]config.FieldError{{"retention_scope", `must be "all" or "orphans", got "referenced"`}}},
		{"RetentionScopeEmpty", func(c *config.Config) { c.RetentionScope = "" },
			[]config.FieldError{{"retention_scope", `must be "all" or "orphans", got ""`}}},
		{"DoctorScheduleBad", func(c *config.Config) { c.DoctorSchedule = "daily" },
			[]config.FieldError{{"doctor_schedule", `must be a cron expression such as "17 3 * * *", got "daily" (or "" to disable the doctor report)`}}},
		{"DoctorScheduleOutOfRange", func(c *config.Config) { c.DoctorSchedule = "17 25 * * *" },
			[]config.FieldError{{"doctor_schedule", `must be a cron expression such as "17 3 * * *", got "17 25 * * *" (or "" to disable the doctor report)`}}},
		{"KeepAfterRestoreNegative", func(c *config.Config) { c.KeepAfterRestoreSeconds = -1 },
			[]config.FieldError{{"keep_after_restore_seconds", "must be 0 or more, got -1"}}},
		{"IdleNegative", func(c *config.Config) { c.IdleSeconds = -300 },
			[]config.FieldError{{"idle_seconds", "must be 0 or more, got -300"}}},
		{"MinSavingTokensNegative", func(c *config.Config) { c.MinSavingTokens = -1 },
			[]config.FieldError{{"min_saving_tokens", "must be 0 or more, got -1"}}},
		{"PreviewCharsNegative", func(c *config.Config) { c.PreviewChars = -1 },
			[]config.FieldError{{"preview_chars", "must be between 0 and 10000, got -1"}}},
		{"PreviewCharsTooMany", func(c *config.Config) { c.PreviewChars = 10001 },
			[]config.FieldError{{"preview_chars", "must be between 0 and 10000, got 10001"}}},
		{"SourceOffloadAboveCharsTooFew", func(c *config.Config) { c.SourceOffloadAboveChars = 999 },
			[]config.FieldError{{"source_offload_above_chars", "must be 1000 characters or more, got 999"}}},
		{"SourcePreviewCharsNegative", func(c *config.Config) { c.SourcePreviewChars = -1 },
			[]config.FieldError{{"source_preview_chars", "must be between 0 and 10000, got -1"}}},
		{"SourcePreviewCharsTooMany", func(c *config.Config) { c.SourcePreviewChars = 10001 },
			[]config.FieldError{{"source_preview_chars", "must be between 0 and 10000, got 10001"}}},
		{"side_store not s3", func(c *config.Config) { c.SideStore = "gs://bucket" },
			[]config.FieldError{{"side_store", `"gs://bucket": expected the scheme s3:// (or "local" for the pack store beside the transcripts), found "gs://"`}}},
		{"side_store with a secret", func(c *config.Config) { c.SideStore = "s3://bucket?secret=x" },
			[]config.FieldError{{"side_store", `"s3://bucket?secret=REDACTED": credentials never go in the config (found the parameter "secret"): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials`}}},

		{"TwoBadFields", func(c *config.Config) { c.Retention = "5x"; c.KeepRecent = -1 },
			[]config.FieldError{
				{"keep_recent", "must be 0 or more, got -1"},
				{"retention", "Invalid duration '5x'. Use m, h, d, or w"},
			}},
		{"EveryFieldBad", func(c *config.Config) {
			c.KeepRecent, c.MinValueLength, c.TriggerTypes, c.AgeThresholdHours = -1, 0, []string{"x"}, -1
			c.AutoCron, c.Retention, c.RetentionCron = "x", "x", "y"
			c.RetentionScope, c.KeepAfterRestoreSeconds, c.IdleSeconds = "x", -1, -1
			c.MinSavingTokens, c.PreviewChars = -1, -1
			c.SourceOffloadAboveChars, c.SourcePreviewChars = 0, -1
		}, []config.FieldError{
			{"keep_recent", "must be 0 or more, got -1"},
			{"min_value_length", "must be 1 byte or more, got 0"},
			{"trigger_types", `unknown trigger type "x" ` + allowed},
			{"age_threshold_hours", "must be 0 or more, got -1"},
			{"auto_cron", `must be a cron expression such as "*/2 * * * *", got "x"`},
			{"retention", "Invalid duration 'x'. Use m, h, d, or w"},
			{"retention_cron", `must be a cron expression such as "0 */6 * * *", got "y"`},
			{"retention_scope", `must be "all" or "orphans", got "x"`},
			{"keep_after_restore_seconds", "must be 0 or more, got -1"},
			{"idle_seconds", "must be 0 or more, got -1"},
			{"min_saving_tokens", "must be 0 or more, got -1"},
			{"preview_chars", "must be between 0 and 10000, got -1"},
			{"source_offload_above_chars", "must be 1000 characters or more, got 0"},
			{"source_preview_chars", "must be between 0 and 10000, got -1"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.modify(&c)
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ve *config.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v (%T), want a *ValidationError", err, err)
			}
			if !reflect.DeepEqual(ve.Errors, tt.want) {
				t.Errorf("Validate() errors:\n got %q\nwant %q", ve.Errors, tt.want)
			}
			if !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("Validate() = %v, does not wrap brainsurgeon.ErrInvalid", err)
			}
		})
	}
}

func TestValidationErrorText(t *testing.T) {
	c := config.Default()
	c.KeepRecent = -1
	c.Retention = "5x"
	err := c.Validate()
	const want = "keep_recent: must be 0 or more, got -1; retention: Invalid duration '5x'. Use m, h, d, or w"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate() = %v, want %q", err, want)
	}
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		t.Fatal("not a *ValidationError")
	}
	if msg, ok := ve.Field("retention"); !ok || msg != "Invalid duration '5x'. Use m, h, d, or w" {
		t.Errorf(`Field("retention") = %q, %v`, msg, ok)
	}
	if msg, ok := ve.Field("idle_seconds"); ok {
		t.Errorf(`Field("idle_seconds") = %q, true; want false`, msg)
	}
}

func TestAccessors(t *testing.T) {
	c := config.Default()
	c.Retention = "1d12h"
	c.KeepAfterRestoreSeconds = 600
	c.IdleSeconds = 300
	c.AgeThresholdHours = 1.5

	for _, tt := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"KeepAfterRestore", c.KeepAfterRestore(), 10 * time.Minute},
		{"Idle", c.Idle(), 5 * time.Minute},
		{"AgeThreshold", c.AgeThreshold(), 90 * time.Minute},
		{"AgeThresholdZero", config.Config{}.AgeThreshold(), 0},
		{"AgeThresholdNegative", config.Config{AgeThresholdHours: -1}.AgeThreshold(), 0},
		{"AgeThresholdNaN", config.Config{AgeThresholdHours: math.NaN()}.AgeThreshold(), 0},
		{"AgeThresholdHuge", config.Config{AgeThresholdHours: 1e300}.AgeThreshold(), math.MaxInt64},
		{"IdleNegative", config.Config{IdleSeconds: -1}.Idle(), 0},
		{"IdleHuge", config.Config{IdleSeconds: math.MaxInt}.Idle(), math.MaxInt64},
		{"KeepAfterRestoreHuge", config.Config{KeepAfterRestoreSeconds: math.MaxInt}.KeepAfterRestore(), math.MaxInt64},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}

	t.Run("RetentionDuration", func(t *testing.T) {
		d, err := c.RetentionDuration()
		if err != nil || d != 36*time.Hour {
			t.Errorf("RetentionDuration() = %v, %v; want 36h, nil", d, err)
		}
	})
	t.Run("RetentionDurationInvalid", func(t *testing.T) {
		_, err := config.Config{Retention: "10m"}.RetentionDuration()
		if !errors.Is(err, duration.ErrRange) || !strings.Contains(err.Error(), "retention") {
			t.Errorf("RetentionDuration() error = %v, want one naming retention and wrapping duration.ErrRange", err)
		}
	})
	t.Run("HasTrigger", func(t *testing.T) {
		d := config.Default()
		for typ, want := range map[string]bool{"thinking": true, "tool_result": true, "image": false, "Thinking": false, "": false} {
			if got := d.HasTrigger(typ); got != want {
				t.Errorf("HasTrigger(%q) = %v, want %v", typ, got, want)
			}
		}
	})
}

func TestTriggerTypesAndFieldNames(t *testing.T) {
	want := []string{"thinking", "tool_result", "tool_call", "image", "assistant", "user", "system"}
	if got := config.TriggerTypes(); !slices.Equal(got, want) {
		t.Errorf("TriggerTypes() = %q, want %q", got, want)
	}
	// FieldNames follows the struct's JSON tags, in order.
	var tags []string
	typ := reflect.TypeFor[config.Config]()
	for i := range typ.NumField() {
		tags = append(tags, typ.Field(i).Tag.Get("json"))
	}
	if got := config.FieldNames(); !slices.Equal(got, tags) {
		t.Errorf("FieldNames() = %q, want %q", got, tags)
	}
}

func TestMarshalJSON(t *testing.T) {
	for _, tt := range []struct {
		name   string
		modify func(c *config.Config)
		want   string // a substring of the output
	}{
		{"NilTriggerTypesIsEmptyList", func(c *config.Config) { c.TriggerTypes = nil }, `"trigger_types":[],`},
		{"NullTimes", func(c *config.Config) {}, `"last_run_at":null,"last_retention_run_at":null}`},
		{"Time", func(c *config.Config) {
			at := time.Date(2026, 2, 20, 17, 30, 0, 0, time.UTC)
			c.LastRunAt = &at
		}, `"last_run_at":"2026-02-20T17:30:00Z"`},
		{"FieldOrder", func(c *config.Config) {}, `{"enabled":false,"keep_recent":3,"min_value_length":500,"trigger_types":["thinking","tool_result"],"age_threshold_hours":24,`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			tt.modify(&c)
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("json.Marshal = %s\nwant it to contain %s", b, tt.want)
			}
		})
	}
}
