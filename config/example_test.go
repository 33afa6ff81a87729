package config_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/brainsurgeon/brainsurgeon/config"
)

func ExampleDefault() {
	c := config.Default()
	fmt.Println("enabled:", c.Enabled)
	fmt.Println("keep_recent:", c.KeepRecent)
	fmt.Println("trigger_types:", c.TriggerTypes)
	fmt.Println("auto_cron:", c.AutoCron)
	fmt.Println("retention:", c.Retention)
	fmt.Println("idle:", c.Idle())
	fmt.Println("age threshold:", c.AgeThreshold())
	// Output:
	// enabled: false
	// keep_recent: 3
	// trigger_types: [thinking tool_result]
	// auto_cron: */2 * * * *
	// retention: 24h
	// idle: 5m0s
	// age threshold: 24h0m0s
}

func ExampleConfig_Validate() {
	c := config.Default()
	c.KeepRecent = -1
	c.Retention = "5x"
	c.TriggerTypes = []string{"thinking", "reasoning"}

	err := c.Validate()
	fmt.Println(err)

	var ve *config.ValidationError
	if errors.As(err, &ve) {
		for _, fe := range ve.Errors {
			fmt.Printf("%s => %s\n", fe.Field, fe.Message)
		}
	}
	// Output:
	// keep_recent: must be 0 or more, got -1; trigger_types: unknown trigger type "reasoning" (allowed: thinking, tool_result, tool_call, image, assistant, user, system); retention: Invalid duration '5x'. Use m, h, d, or w
	// keep_recent => must be 0 or more, got -1
	// trigger_types => unknown trigger type "reasoning" (allowed: thinking, tool_result, tool_call, image, assistant, user, system)
	// retention => Invalid duration '5x'. Use m, h, d, or w
}

func ExampleDecode() {
	// A config written before idle_seconds and friends existed.
	old := []byte(`{
  "enabled": true,
  "keep_recent": 3,
  "min_value_length": 500,
  "trigger_types": ["thinking", "tool_result"],
  "age_threshold_hours": 24,
  "scan_interval_seconds": 30,
  "auto_cron": "*/2 * * * *",
  "retention": "7d",
  "retention_cron": "0 */6 * * *",
  "keep_restore_remote_calls": false,
  "keep_after_restore_seconds": 600,
  "last_run_at": null,
  "last_retention_run_at": null
}`)
	// A text logger without timestamps, so that the output is stable.
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	c, added, err := config.Decode(old, log)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("added:", added)
	fmt.Println("enabled:", c.Enabled, "retention:", c.Retention, "idle_seconds:", c.IdleSeconds)
	// Output:
	// level=INFO msg="Config upgraded: obsolete field scan_interval_seconds is ignored and removed when the config is saved (nothing reads it: automatic pruning runs on the auto_cron schedule)" field=scan_interval_seconds
	// level=INFO msg="Config upgraded: renamed field keep_restore_remote_calls to keep_purge_control_calls" field=keep_purge_control_calls old_field=keep_restore_remote_calls
	// level=INFO msg="Config upgraded: added field retention_scope with default \"all\"" field=retention_scope default="\"all\""
	// level=INFO msg="Config upgraded: added field doctor_schedule with default \"17 3 * * *\"" field=doctor_schedule default="\"17 3 * * *\""
	// level=INFO msg="Config upgraded: added field idle_seconds with default 300" field=idle_seconds default=300
	// level=INFO msg="Config upgraded: added field min_saving_tokens with default 2000" field=min_saving_tokens default=2000
	// level=INFO msg="Config upgraded: added field preview_chars with default 0" field=preview_chars default=0
	// level=INFO msg="Config upgraded: added field source_offload_above_chars with default 40000" field=source_offload_above_chars default=40000
	// level=INFO msg="Config upgraded: added field source_preview_chars with default 400" field=source_preview_chars default=400
	// level=INFO msg="Config upgraded: added field side_store with default \"local\"" field=side_store default="\"local\""
	// level=INFO msg="Config upgraded: added field compaction with default {\"auto_enabled\":false,\"context_window\":200000,\"prune_trigger_percent\":80,\"prune_min_tool_tokens\":50000,\"prune_protect_recent\":40000,\"summarize_trigger_percent\":88,\"summarize_keep_recent\":25000,\"full_trigger_percent\":95,\"warn_at\":3,\"hard_warn_at\":5,\"auto_quiet_seconds\":300,\"tokenizer\":\"calibrated\",\"summarizer\":{\"base_url\":\"\",\"model\":\"\",\"temperature\":0.2,\"max_tokens\":13107,\"timeout_seconds\":120,\"retries\":3}}" field=compaction default="{\"auto_enabled\":false,\"context_window\":200000,\"prune_trigger_percent\":80,\"prune_min_tool_tokens\":50000,\"prune_protect_recent\":40000,\"summarize_trigger_percent\":88,\"summarize_keep_recent\":25000,\"full_trigger_percent\":95,\"warn_at\":3,\"hard_warn_at\":5,\"auto_quiet_seconds\":300,\"tokenizer\":\"calibrated\",\"summarizer\":{\"base_url\":\"\",\"model\":\"\",\"temperature\":0.2,\"max_tokens\":13107,\"timeout_seconds\":120,\"retries\":3}}"
	// added: [retention_scope doctor_schedule idle_seconds min_saving_tokens preview_chars source_offload_above_chars source_preview_chars side_store compaction]
	// enabled: true retention: 7d idle_seconds: 300
}

func ExampleConfig_Merge() {
	c := config.Default()
	// The body of POST /api/config.
	if err := c.Merge([]byte(`{"enabled":true,"age_threshold_hours":48}`)); err != nil {
		fmt.Println(err)
	}
	fmt.Println("enabled:", c.Enabled, "age_threshold_hours:", c.AgeThresholdHours)

	err := c.Merge([]byte(`{"keep_recent":-1,"retention":"2d"}`))
	fmt.Println(err)
	fmt.Println("retention unchanged:", c.Retention)
	// Output:
	// enabled: true age_threshold_hours: 48
	// keep_recent: must be 0 or more, got -1
	// retention unchanged: 24h
}
