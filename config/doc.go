// Package config holds the runtime configuration of BrainSurgeon's smart
// pruning: what to extract, when to run, how long extracted values are kept,
// and when the last runs happened. The runtime configuration lives in a
// file; security settings and paths come from the environment only and are
// never part of it.
//
// # The file
//
// The configuration lives in one pretty-printed JSON file,
// ".brainsurgeon/config.json", in the directory that holds the agents
// directory (so ~/.openclaw/.brainsurgeon/config.json for the agents
// directory ~/.openclaw/agents); [Path] computes it. Security settings and
// paths (API keys, CORS origins, the agents directory, read-only mode) are
// not part of it: they come from the environment only.
//
// [Load] reads the file. A missing file is not an error: Load returns
// [Default] and creates nothing, because creating the file is the daemon's
// job. [Save] validates a Config and replaces the file atomically (temp
// file in the same directory, fsync, rename, directory fsync), with mode
// 0600 in a directory of mode 0700.
//
// # Upgrades
//
// A file written by an older BrainSurgeon may lack fields added since.
// [Decode] (and so Load) fills every missing field with its default, returns
// the names of the fields it filled and logs each at Info level, for example
//
//	Config upgraded: added field keep_recent with default 3
//
// Decode and Load never write: a caller that wants the upgraded file on
// disk calls Save. The field keep_restore_remote_calls of the first design
// is read as keep_purge_control_calls. Fields this version does not know
// (a newer BrainSurgeon may have written them) are ignored with a warning;
// note that the next Save does not keep them.
//
// # Validation
//
// [Config.Validate] checks every field and reports all problems at once in
// a [*ValidationError], one [FieldError] per bad field, named by its JSON
// name, in the order of the fields in the file:
//
//	keep_recent: must be 0 or more, got -1; retention: Invalid duration '5x'. Use m, h, d, or w
//
// A ValidationError wraps [brainsurgeon.ErrInvalid], so a server can answer
// it with a 400. [Config.Merge] applies a partial JSON object, as sent to
// POST /api/config, and validates the result.
//
// # Compaction
//
// The "compaction" object ([Compaction], defaults in [DefaultCompaction])
// holds the thresholds of the layered compaction (prune, summarize, full),
// the warning counts, the quiet period of automatic compaction (off by
// default: auto_enabled false), the tokenizer and the OpenAI-compatible
// summarizer's endpoint (base_url, model, temperature, max_tokens,
// timeout_seconds, retries). Members missing from the file keep their
// defaults; a bad member is reported as "compaction.<member>". The
// summarizer's API key is never stored: it comes from the environment.
//
// # The agents directory
//
// The agents directory is never part of the file: a command takes it from
// its -agents-dir flag, whose default is [DefaultAgentsDir]
// ($BRAINSURGEON_AGENTS_DIR, $AGENTS_DIR, $OPENCLAW_STATE_DIR/agents, then
// ~/.openclaw/agents). The state dir and the config file sit beside it
// ([StateDir], [Path]).
//
// # Concurrency
//
// A Config is a plain value; copy it freely. Its TriggerTypes slice is
// shared between copies, so treat it as read-only or replace it whole.
// Save may be called from several goroutines or processes: the file always
// holds one complete config, the last one renamed into place.
package config
