package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/retention"
	"github.com/brainsurgeon/brainsurgeon/sidemigrate"
)

const sideUsage = `Usage: brainsurgeon side <subcommand> [flags]

Where the extracted values are kept, and moving them between stores: the
pack store beside the transcripts ("local", the default) and an
S3-compatible object store (side_store: "s3://bucket/prefix?endpoint=…").

Subcommands:
  status    which store holds the values, and a migration in progress
  migrate   move every value to another store, then switch the config

Run "brainsurgeon help side <subcommand>" for a subcommand's flags.
`

const sideMigrateUsage = `Usage: brainsurgeon side migrate --to s3://BUCKET[/PREFIX]?endpoint=…|local [--replace] [--agents-dir DIR] [--json]

Copies every extracted value of this host to the store --to names, reads
each pack back from there and checks it (sha256, index, every record's
size and CRC-32C), then switches: under the side store's lock a last round
copies what passes wrote meanwhile, the config's side_store is set to --to,
and <state dir>/side-store.json names the new store. Until that moment the
old store is the one in use; after it, every process writes to the new one
(a process that still holds the old one fails its next write, untouched:
restart the daemon after the switch so that its API uses the new store).

The old store is not changed: its copy of the values stays until you
remove it. A run that is interrupted resumes when run again (progress is
kept in <state dir>/side-migrate.json). The daemon may keep running.

Credentials for s3:// come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,
or a profile in ~/.aws/credentials (AWS_PROFILE); never from the config.

--replace lets the target hold packs of this host that the source lacks
(an earlier migration's copy, since reduced by retention): they are removed
at the switch, so that the target is an exact copy.

Exit status: 0 when the values are in --to and the config names it; 1 when
the run failed (run it again to resume); 2 for bad arguments.

Examples:
  brainsurgeon side migrate --to "s3://bs-values/fleet?endpoint=https://s3.eu-west-3.amazonaws.com&region=eu-west-3"
  brainsurgeon side migrate --to local

Flags:
`

const sideStatusUsage = `Usage: brainsurgeon side status [--agents-dir DIR] [--json]

Prints which store holds the extracted values (side-store.json in the
state dir; none means the local pack store), what the config's side_store
says, and a migration in progress. Reads only.

Flags:
`

type sideCommand struct{ m *Main }

func (c *sideCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(c.m.Stdout, sideUsage)
		if len(args) == 0 {
			return &cli.UsageError{Msg: "side needs a subcommand: status or migrate", Try: "brainsurgeon side --help"}
		}
		return nil
	}
	switch args[0] {
	case "migrate":
		return c.migrate(ctx, args[1:])
	case "status":
		return c.status(ctx, args[1:])
	}
	return &cli.UsageError{Msg: fmt.Sprintf("unknown side subcommand %q, expected status or migrate", args[0]), Try: "brainsurgeon side --help"}
}

// sideStatus is the output of side status.
type sideStatus struct {
	// Store holds the values: "local" or a canonical s3:// setting.
	Store      string `json:"store"`
	Generation int    `json:"generation"`
	// Config is the config file's side_store.
	Config string `json:"config"`
	// Migration is the migration in progress, or null.
	Migration *sidemigrate.StatusReport `json:"migration"`
}

func (c *sideCommand) status(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon side status", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, sideStatusUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	if err := backend.CheckAgentsDir(*agentsDir); err != nil {
		return err
	}
	stateDir := config.StateDir(*agentsDir)
	st, _, err := backend.ReadSideStoreState(stateDir)
	if err != nil {
		return err
	}
	cfg, _, err := config.LoadFile(ctx, *agentsDir, nil)
	var ve *config.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	out := sideStatus{Store: st.Store, Generation: st.Generation, Config: cfg.SideStore}
	if out.Migration, err = sidemigrate.Status(stateDir); err != nil {
		return err
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, out, nil)
	}
	w := c.m.Stdout
	fmt.Fprintf(w, "Values are in   %s (generation %d)\n", out.Store, out.Generation)
	fmt.Fprintf(w, "Config names    %s\n", orLocal(out.Config))
	if m := out.Migration; m != nil {
		fmt.Fprintf(w, "Migration       from %s to %s, started %s: %s verified in %s (run side migrate --to %s to finish)\n",
			m.From, m.To, m.StartedAt.Format("2006-01-02 15:04:05Z"), plural.Count(m.Verified, "pack", "packs"), plural.Count(m.Locations, "location", "locations"), m.To)
	}
	return nil
}

func orLocal(s string) string {
	if s == "" {
		return config.SideStoreLocal
	}
	return s
}

func (c *sideCommand) migrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon side migrate", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	to := fs.String("to", "", `the store to move the values to: "local" or an s3:// setting (required)`)
	replace := fs.Bool("replace", false, "remove packs of this host that the target holds and the source lacks")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, sideMigrateUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	if *to == "" {
		return &cli.UsageError{Msg: `side migrate needs --to: "local" or an s3:// setting`, Try: fs.Name() + " --help"}
	}
	if _, err := backend.CanonicalSideStore(*to); err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: fs.Name() + " --help"}
	}
	if err := backend.CheckAgentsDir(*agentsDir); err != nil {
		return err
	}
	// Opened with the store that holds the values now, whatever the
	// config says (a run that stopped after setting it resumes here).
	cur, _, err := backend.ReadSideStoreState(config.StateDir(*agentsDir))
	if err != nil {
		return err
	}
	set, err := cli.Open(ctx, *agentsDir, backend.Options{Logger: c.m.logger(), SideStore: cur.Store})
	if err != nil {
		return err
	}
	prog := newProgress(c.m.Stderr)
	rep, err := sidemigrate.Run(ctx, sidemigrate.Options{Set: set, To: *to, Replace: *replace, Logger: c.m.logger(),
		Progress: func(p sidemigrate.Progress) {
			if p.Locations > 1 {
				prog.line(fmt.Sprintf("round %d: %d/%d locations: %s", p.Round, p.Done, p.Locations, p.Location))
			}
		}})
	prog.done()
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, rep, err)
	}
	w := c.m.Stdout
	if rep != nil {
		switch rep.Phase {
		case "already":
			fmt.Fprintf(w, "The values are in %s already; the config names it.\n", rep.To)
		case "switched":
			fmt.Fprintf(w, "Moved the values of %s to %s and switched (generation %d).\n",
				plural.Count(rep.Locations, "location", "locations"), rep.To, rep.Generation)
			fmt.Fprintf(w, "  %s of %s copied (%s), %s read back and checked (%s), %s folded into packs, %s\n",
				plural.Count(rep.PacksCopied, "pack", "packs"), plural.Count(rep.Packs, "pack", "packs"), retention.HumanBytes(rep.BytesCopied),
				plural.Count(rep.Verified, "unit", "units"), plural.Count(rep.Records, "record", "records"),
				plural.Count(rep.ConvertedFiles, "per-entry file", "per-entry files"), plural.Count(rep.Rounds, "round", "rounds"))
			if rep.Replaced > 0 {
				fmt.Fprintf(w, "  %s of the target's own removed (--replace)\n", plural.Count(rep.Replaced, "pack", "packs"))
			}
			fmt.Fprintf(w, "The old copy stays in %s until you remove it. Restart the daemon so that its API uses the new store.\n", rep.SourceKept)
		default:
			fmt.Fprintf(w, "%s of %s copied so far (%s); run the same command again to resume.\n",
				plural.Count(rep.PacksCopied, "pack", "packs"), plural.Count(rep.Packs, "pack", "packs"), retention.HumanBytes(rep.BytesCopied))
		}
	}
	return err
}
