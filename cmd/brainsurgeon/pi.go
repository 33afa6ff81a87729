package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
	"github.com/brainsurgeon/brainsurgeon/internal/piinstall"
)

const piUsage = `Usage: brainsurgeon pi <subcommand> [flags]

Installs BrainSurgeon's pi extension, which this binary carries, for the pi
coding agent, and takes it back. The extension gives pi the purge_control
and recall tools, stores huge tool results through the daemon before pi
saves them (a placeholder with a preview takes their place, restorable byte
for byte), shows the model a layered, lossless view of each session, and
makes pi's compactions with BrainSurgeon's layers. When the daemon is down,
slow or refuses, pi runs as without the extension and says why once per
session.

Subcommands:
  install    write the extension, its config and the API key; print the
             settings.json line to add, or add it with --link
  uninstall  take back everything install did, and write offloaded tool
             results back into their transcripts
  status     where the extension is, whether settings.json loads it, and
             whether the running system works end to end (exit 1 when not)

pi's dir is $PI_CODING_AGENT_DIR, else ~/.pi/agent; --project DIR installs
into DIR/.pi instead. The daemon the extension calls is the one of
--agents-dir, else OpenClaw's agents dir when it exists (a daemon serves
pi's sessions beside OpenClaw's), else pi's sessions dir.

Run "brainsurgeon help pi <subcommand>" for a subcommand's flags.
`

const piInstallUsage = `Usage: brainsurgeon pi install [--project DIR] [--agents-dir DIR] [--daemon-url U] [--link] [--yes] [--json]

Writes the extension to <pi dir>/brainsurgeon/ (replacing an older copy in
one step; a dir that holds anything else is refused), its config
brainsurgeon.json beside it (daemonUrl, apiKeyFile), and creates the
daemon's API key file <agents dir>/../.brainsurgeon/api.key (0600) unless it
exists. The key is never printed.

Without --link, pi's settings are not changed: it prints the member to add
to settings.json, and "pi -e <dir>" to try the extension once.

With --link (after a yes/no question, or --yes), it adds the extension's
dir to "extensions" in <pi dir>/settings.json, keeping the file's bytes in
the install record, so that "brainsurgeon pi uninstall" gives them back
byte for byte. pi loads the extension at its next start (/reload in a
running pi).

Examples:
  brainsurgeon pi install --link --yes
  brainsurgeon pi install --project . --link

Flags:
`

const piUninstallUsage = `Usage: brainsurgeon pi uninstall [--project DIR] [--agents-dir DIR] [--yes] [--keep-placeholders] [--json]

Takes back what install did: settings.json gets its bytes from before
install back when nothing else changed it since (or goes away when there
was none), else only the extension's entry is taken out; the extension's
files go (a file of yours in its dir is kept), and so does the key file when
install created it and the OpenClaw plugin's install does not use it.

Then it writes every tool result the extension offloaded back in place of
its placeholder, byte for byte: now when the session is idle, else queued
for the daemon (and for running uninstall again). --keep-placeholders
leaves them (each names its value: brainsurgeon restore <session> tc-<id>).

Flags:
`

const piStatusUsage = `Usage: brainsurgeon pi status [--project DIR] [--agents-dir DIR] [--json]

Shows where the extension is and checks the running system end to end,
each check with what it found and, when it fails, the fix:

  extension_installed      a copy of the extension and its config
  settings_load_extension  settings.json names its dir in "extensions"
  daemon_reachable         the daemon answers at the extension's daemonUrl
  daemon_serves_pi         it serves pi's sessions dir
  key_accepted             it accepts the extension's key

A check that needs an earlier one is left out when that one fails. Reads
only. Exit status: 0 when every check passed, 1 when one failed (--json:
"healthy", "checks": [{"name","ok","detail","fix"}]).

Flags:
`

type piCommand struct{ m *Main }

func (c *piCommand) Run(ctx context.Context, args []string) error {
	return installCommands(ctx, c.m, "pi", piUsage, args, c.install, c.uninstall, c.status)
}

// piFlags are the flags every pi subcommand takes.
type piFlags struct {
	project, agentsDir string
	asJSON             bool
}

func (f *piFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.project, "project", "", "install into DIR/.pi (a project's) instead of pi's agent dir")
	fs.StringVar(&f.agentsDir, "agents-dir", "", "the agents dir of the daemon the extension calls (default: OpenClaw's when it exists, else pi's sessions dir)")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
}

func (c *piCommand) install(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon pi install", flag.ContinueOnError)
	var f piFlags
	f.register(fs)
	var o piinstall.InstallOptions
	fs.StringVar(&o.DaemonURL, "daemon-url", openclawinstall.DefaultDaemonURL, "the daemon the extension calls (loopback http only)")
	fs.BoolVar(&o.Link, "link", false, "add the extension to pi's settings.json")
	yes := fs.Bool("yes", false, "do not ask before changing settings.json")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, piInstallUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	o.Project, o.AgentsDir = f.project, f.agentsDir
	p, url, err := piinstall.Plan(piinstall.Env{}, o)
	if err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: fs.Name() + " --help"}
	}
	if o.Link && !*yes {
		if !isTerminalReader(c.m.Stdin) {
			return &cli.UsageError{Msg: "--link changes pi's settings.json and needs confirmation: stdin is not a terminal, so pass --yes (or leave out --link to print the line instead)", Try: fs.Name() + " --help"}
		}
		fmt.Fprintf(c.m.Stderr, "This writes the extension to %s (daemonUrl %s, apiKeyFile %s) and adds it to %s; the file's bytes are kept in %s.\n",
			p.Dir, url, p.KeyFile, p.Settings, p.Record)
		if ok, answer := c.m.ask("Proceed?"); !ok {
			return fmt.Errorf("pi install: not confirmed (answered %q, expected y): nothing written", answer)
		}
	}
	res, err := piinstall.Install(ctx, piinstall.Env{}, o)
	if res != nil && err == nil {
		agentsArg := f.agentsDir
		if agentsArg == "" && res.AgentsDir == res.PiSessions {
			agentsArg = res.AgentsDir
		}
		res.Next = piNext(ctx, res.DaemonURL, agentsArg)
	}
	if f.asJSON {
		if res == nil {
			return err
		}
		return cli.WriteJSON(c.m.Stdout, res, err)
	}
	if res == nil {
		return err
	}
	w := c.m.Stdout
	fmt.Fprintf(w, "Extension %s written to %s (config: %s)\n", res.Version, res.Dir, piinstall.ConfigName)
	if res.KeyCreated {
		fmt.Fprintf(w, "API key created in %s (0600; brainsurgeon serve reads it too, without a restart)\n", res.KeyFile)
	} else {
		fmt.Fprintf(w, "API key kept: %s\n", res.KeyFile)
	}
	if err != nil {
		return err
	}
	switch {
	case res.SettingsChanged:
		fmt.Fprintf(w, "Added to %s (its bytes before: in %s; brainsurgeon pi uninstall gives them back).\n", res.Settings, res.Record)
	case res.Linked:
		fmt.Fprintf(w, "%s names the extension already.\n", res.Settings)
	default:
		fmt.Fprintf(w, "\npi's settings were not changed. To load the extension, add this to %s:\n\n  %s\n\nor run: brainsurgeon pi install --link", res.Settings, res.Snippet)
		if f.project != "" {
			fmt.Fprintf(w, " --project %s", f.project)
		}
		fmt.Fprintf(w, "\nor try it once: %s\n\n", res.TryCommand)
	}
	printNext(w, res.Next)
	return nil
}

// piNext is what to run after install: the daemon when none answers, then
// pi (which loads the extension at start), then the check.
func piNext(ctx context.Context, daemonURL, agentsDirArg string) *openclawinstall.Next {
	n := &openclawinstall.Next{Restart: []string{}}
	state, h, detail := openclawinstall.ProbeDaemon(ctx, openclawinstall.Env{}, daemonURL)
	n.Daemon = state
	serve, service := openclawinstall.StartCommands(daemonURL, agentsDirArg)
	switch state {
	case openclawinstall.DaemonRunning:
		n.Notes = append(n.Notes, fmt.Sprintf("The daemon is running at %s (version %s): it reads the key file by itself. If it was started before pi's sessions dir existed, restart it so that it serves pi's sessions.", daemonURL, h.Version))
	case openclawinstall.DaemonOther, openclawinstall.DaemonWaiting:
		n.Notes = append(n.Notes, fmt.Sprintf("Something at %s is not a daemon serving sessions (%s): stop it, or install again with --daemon-url pointing to a free port.", daemonURL, detail))
	default:
		n.Commands = append(n.Commands, serve)
		n.Notes = append(n.Notes, fmt.Sprintf("No daemon answers at %s: start it with %q (or as a user service: %q).", daemonURL, serve, service))
	}
	n.Restart = append(n.Restart, "pi")
	n.Notes = append(n.Notes, "Start pi (or /reload in a running pi) so that it loads the extension.")
	n.Commands = append(n.Commands, "brainsurgeon pi status")
	return n
}

// piUninstallOutput is the JSON output of pi uninstall.
type piUninstallOutput struct {
	*piinstall.UninstallResult
	Cleanup *cleanupOutput `json:"cleanup,omitempty"`
}

func (c *piCommand) uninstall(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon pi uninstall", flag.ContinueOnError)
	var f piFlags
	f.register(fs)
	yes := fs.Bool("yes", false, "do not ask before changing settings.json")
	keep := fs.Bool("keep-placeholders", false, "leave the placeholders of offloaded tool results in the transcripts (default: write the results back)")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, piUninstallUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	p, err := piinstall.ResolvePaths(piinstall.Env{}, f.project, f.agentsDir)
	if err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: fs.Name() + " --help"}
	}
	if rec, ok, _ := piinstall.ReadRecord(p.Record); ok && rec.Linked && !*yes {
		if !isTerminalReader(c.m.Stdin) {
			return &cli.UsageError{Msg: "uninstall changes pi's settings.json and needs confirmation: stdin is not a terminal, so pass --yes", Try: fs.Name() + " --help"}
		}
		if ok, answer := c.m.ask(fmt.Sprintf("This takes the extension out of %s and removes its files. Proceed?", p.Settings)); !ok {
			return fmt.Errorf("pi uninstall: not confirmed (answered %q, expected y): nothing changed", answer)
		}
	}
	res, err := piinstall.Uninstall(ctx, piinstall.Env{}, f.project, f.agentsDir)
	var co *cleanupOutput
	if res != nil && err == nil {
		var cerr error
		if co, cerr = cleanupSources(ctx, c.m, p.AgentsDir, res.DaemonURL, *keep); cerr != nil {
			err = fmt.Errorf("pi uninstall: the extension is uninstalled, but writing the offloaded tool results back failed: %w (run uninstall again to retry)", cerr)
		} else if co != nil && len(co.Errors) > 0 {
			err = fmt.Errorf("pi uninstall: the extension is uninstalled, but %d sessions could not be cleaned up (see above; run uninstall again to retry)", len(co.Errors))
		}
	}
	if f.asJSON {
		if res == nil {
			return err
		}
		return cli.WriteJSON(c.m.Stdout, piUninstallOutput{UninstallResult: res, Cleanup: co}, err)
	}
	if res == nil {
		return err
	}
	w := c.m.Stdout
	switch res.SettingsAction {
	case "restored":
		fmt.Fprintf(w, "Settings %s restored to their bytes from before install.\n", res.Settings)
	case "removed":
		fmt.Fprintf(w, "Settings %s removed: there were none before install.\n", res.Settings)
	case "entry_removed":
		fmt.Fprintf(w, "Settings %s changed since install: only the extension's entry was taken out, other changes kept.\n", res.Settings)
	}
	for _, r := range res.Removed {
		fmt.Fprintf(w, "Removed %s\n", r)
	}
	for _, k := range res.Kept {
		fmt.Fprintf(w, "Kept %s\n", k)
	}
	printCleanup(w, co)
	if err == nil && !res.Installed && len(res.Removed) == 0 {
		fmt.Fprintln(w, "Nothing to uninstall: the extension is not installed.")
	} else if res.Installed {
		fmt.Fprintln(w, "A running pi keeps the extension until it restarts (or /reload).")
	}
	return err
}

func (c *piCommand) status(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon pi status", flag.ContinueOnError)
	var f piFlags
	f.register(fs)
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, piStatusUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	st, err := piinstall.Status(ctx, piinstall.Env{}, f.project, f.agentsDir)
	if err != nil {
		return err
	}
	err = piinstall.HealthError(st)
	if f.asJSON {
		return cli.WriteJSON(c.m.Stdout, st, err)
	}
	w := c.m.Stdout
	switch {
	case !st.Installed:
		fmt.Fprintf(w, "Extension:   not installed (%s); this binary carries %s\n", st.Dir, st.EmbeddedVersion)
	default:
		fmt.Fprintf(w, "Extension:   %s in %s (this binary carries %s)\n", st.InstalledVersion, st.Dir, st.EmbeddedVersion)
	}
	fmt.Fprintf(w, "Settings:    %s\n", st.Settings)
	fmt.Fprintf(w, "Sessions:    %s\n", st.PiSessions)
	fmt.Fprintf(w, "Daemon:      %s\n", st.DaemonURL)
	printPiChecks(w, st.Checks)
	return err
}

// printPiChecks lists the checks with their fixes.
func printPiChecks(w io.Writer, checks []openclawinstall.Check) {
	printChecks(w, &openclawinstall.StatusResult{Checks: checks})
}
