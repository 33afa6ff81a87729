package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
)

const openclawUsage = `Usage: brainsurgeon openclaw <subcommand> [flags]

Installs BrainSurgeon's OpenClaw plugin (the purge_control and recall tools,
lossless offload of huge tool results through the daemon, and the context
engine "brainsurgeon"), which this binary carries, and takes it back.

Subcommands:
  install    write the plugin and its API key; print the config to add, or
             link it into OpenClaw's config with --link
  uninstall  take back everything install did
  status     where the plugin is, its version, whether the config names it,
             which context engine the config selects, and whether the
             running system works end to end (exit 1 when not)

The OpenClaw root is the parent of the agents dir, as for brainsurgeon serve
and brainsurgeon service: --agents-dir, else $BRAINSURGEON_AGENTS_DIR, else
$AGENTS_DIR, else $OPENCLAW_STATE_DIR/agents, else ~/.openclaw/agents. Its
config is $OPENCLAW_CONFIG_PATH, else <root>/openclaw.json.

Run "brainsurgeon help openclaw <subcommand>" for a subcommand's flags.
`

const openclawInstallUsage = `Usage: brainsurgeon openclaw install [--agents-dir DIR] [--dir D] [--daemon-url U] [--engine] [--link] [--yes] [--openclaw PATH] [--json]

Writes the plugin to <root>/.brainsurgeon/openclaw-plugin/ (or --dir),
replacing an older copy in one step, and creates the API key file
<root>/.brainsurgeon/api.key (0600) unless it exists. The key is never
printed; brainsurgeon serve reads the same file. A --dir that holds anything
but the plugin's files (a checkout, your own files) is refused. An existing
key file that others may read gets mode 0600.

Without --link, nothing of OpenClaw's is changed: it prints the config to add
to openclaw.json and the OpenClaw command that does it for you.

With --link (after a yes/no question, or --yes), it backs up the config's
bytes, runs "openclaw plugins install --link <dir> --force
--accept-capabilities" (without the last two on OpenClaw 2026.7) and
"openclaw config patch" to set the plugin's daemonUrl and apiKeyFile, and
records it all in <root>/.brainsurgeon/openclaw-install.json so that
"brainsurgeon openclaw uninstall" restores the config byte for byte.

It ends with the exact commands to run next, by what is running: when no
daemon answers at the daemon URL, "brainsurgeon serve" (or "brainsurgeon
service install"); then "openclaw gateway restart", which loads the plugin
(a gateway that hot-reloads its config picks it up by itself); then
"brainsurgeon openclaw status". A running daemon needs no restart: it
re-reads the key file by itself within seconds of a change.

--engine also selects the plugin's context engine: plugins.slots.contextEngine
"brainsurgeon" (in the same config patch with --link, recording the slot's
previous value; in the printed config without). The engine shows the model a
layered, lossless view of each session (old large values collapsed to
placeholders, older spans summarized by the daemon) and owns compaction; pick
it on OpenClaw 2026.8 and later (see the plugin's README for 2026.7).
Uninstall puts the slot back ("legacy", or the value it replaced).

Examples:
  brainsurgeon openclaw install
  brainsurgeon openclaw install --link --yes --daemon-url http://127.0.0.1:9000
  brainsurgeon openclaw install --engine --link --yes

Flags:
`

const openclawUninstallUsage = `Usage: brainsurgeon openclaw uninstall [--agents-dir DIR] [--yes] [--keep-placeholders] [--openclaw PATH] [--json]

Takes back what install did. When OpenClaw's config is byte-identical to what
install left, its bytes from before install are restored (or the file is
removed if there was none); otherwise only the brainsurgeon entries are taken
out ("openclaw plugins uninstall brainsurgeon" and "openclaw config patch")
and every other change is kept. A context-engine slot that selects
"brainsurgeon" goes back to the value install --engine replaced, else to
"legacy" (OpenClaw's own engine). When the config names the plugin though
install did not link it (you added it by hand), uninstall takes it out the
same way, and without --yes or a "y" on a terminal it refuses and prints the
commands to run first. Then it removes the plugin's files (and their dir when
that leaves it empty), the key file (only if install created it), the backup
and the install record. Asks first when it will change the config (or pass
--yes).

Then it cleans up the transcripts: every tool result the plugin offloaded
(a [[extracted-tc-<id>]] placeholder, its value in the side store) is
written back in place of its placeholder, byte for byte, as a restore is:
now when the session is idle, else queued until it is (a session is busy
for idle_seconds, 300 s by default, after its last turn). The daemon applies
the queue on its schedule, and so does running uninstall again. Write-backs
queued earlier are applied first. A value OpenClaw's SQLite store does not
accept in place of its placeholder (content of another shape than one text
block) is kept and reported. --keep-placeholders leaves every placeholder
(each names its value: brainsurgeon restore <session> tc-<id> brings it
back). It says what was written back, what is queued and who applies it,
and what was kept (JSON: "cleanup", with "written_back", "queued" and
"kept" per session), and what must be restarted: the gateway, to drop the
plugin; never the daemon. Running it again does nothing else.

Flags:
`

const openclawStatusUsage = `Usage: brainsurgeon openclaw status [--agents-dir DIR] [--json]

Shows where the plugin is, its version against the one this binary carries,
whether OpenClaw's config names the plugin's dir, which context engine it
selects (plugins.slots.contextEngine; "legacy" when unset), and whether the
key file exists. Then it checks the running system end to end, each check
with what it found and, when it fails, the fix:

  plugin_installed     a copy of the plugin in its dir
  config_links_plugin  OpenClaw's config loads it (and does not disable it)
  daemon_reachable     the daemon answers GET <daemonUrl>/api/health
  daemon_ready         it serves this OpenClaw root's agents dir (not waiting
                       for OpenClaw to create it)
  key_accepted         it accepts the plugin's key (apiKeyFile) on
                       GET /api/plugin/v1/health
  engine_selected      plugins.slots.contextEngine is "brainsurgeon" (when
                       install --engine selected it, or the slot names it)
  engine_serving       the engine's last view is newer than its last failure
  plugin_calls         the plugin's recent calls succeed (the daemon keeps the
                       last failures: 403s, refused bodies)

A check that needs an earlier one is left out when that one fails. Reads
only. Exit status: 0 when every check passed, 1 when one failed (--json:
"healthy", "checks": [{"name","ok","detail","fix"}]).

Flags:
`

type openclawCommand struct{ m *Main }

func (c *openclawCommand) Run(ctx context.Context, args []string) error {
	return installCommands(ctx, c.m, "openclaw", openclawUsage, args, c.install, c.uninstall, c.status)
}

// installCommands runs one of the install, uninstall and status
// subcommands of the command name (openclaw, pi, service), or its help;
// usage is the command's help text.
func installCommands(ctx context.Context, m *Main, name, usage string, args []string,
	install, uninstall, status func(context.Context, []string) error) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return &cli.UsageError{Msg: name + " needs a subcommand: install, uninstall or status", Try: "brainsurgeon help " + name}
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "install":
		return install(ctx, rest)
	case "uninstall":
		return uninstall(ctx, rest)
	case "status":
		return status(ctx, rest)
	case "help", "-h", "--help", "-help":
		if len(rest) > 0 && !isHelp(rest[0]) {
			return installCommands(ctx, m, name, usage, []string{rest[0], "--help"}, install, uninstall, status)
		}
		fmt.Fprint(m.Stdout, usage)
		return nil
	}
	return &cli.UsageError{Msg: fmt.Sprintf("unknown %s subcommand %q (expected install, uninstall or status)", name, sub), Try: "brainsurgeon help " + name}
}

// noArgs refuses positional arguments.
func noArgs(pos []string, name string) error {
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("%s takes no arguments, got %q", name, pos), Try: name + " --help"}
	}
	return nil
}

// ask asks question on stderr and reads the answer from stdin; only "y"
// or "yes" agree.
func (m *Main) ask(question string) (bool, string) {
	fmt.Fprintf(m.Stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(m.Stdin).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", strings.TrimSpace(line)
}

func (c *openclawCommand) install(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon openclaw install", flag.ContinueOnError)
	var o openclawinstall.InstallOptions
	fs.StringVar(&o.AgentsDir, "agents-dir", config.DefaultAgentsDir(), "the agents dir; its parent is the OpenClaw root")
	fs.StringVar(&o.Dir, "dir", "", "write the plugin here instead of <root>/.brainsurgeon/openclaw-plugin")
	fs.StringVar(&o.DaemonURL, "daemon-url", openclawinstall.DefaultDaemonURL, "the daemon the plugin calls (loopback http only)")
	fs.BoolVar(&o.Link, "link", false, "link the plugin into OpenClaw's config with OpenClaw's CLI")
	fs.BoolVar(&o.Engine, "engine", false, "also select the plugin's context engine (plugins.slots.contextEngine \"brainsurgeon\")")
	yes := fs.Bool("yes", false, "do not ask before changing OpenClaw's config")
	fs.StringVar(&o.OpenClaw, "openclaw", "", "the openclaw executable (default: openclaw on PATH)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, openclawInstallUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	p, url, err := openclawinstall.Plan(openclawinstall.Env{}, o)
	if err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: fs.Name() + " --help"}
	}
	if o.Link {
		if _, err := openclawinstall.LocateOpenClaw(openclawinstall.Env{}, o.OpenClaw); err != nil {
			return err
		}
	}
	if o.Link && !*yes {
		if !isTerminalReader(c.m.Stdin) {
			return &cli.UsageError{Msg: "--link changes OpenClaw's config and needs confirmation: stdin is not a terminal, so pass --yes (or leave out --link to print the config instead)", Try: fs.Name() + " --help"}
		}
		engine := ""
		if o.Engine {
			engine = ", and selects its context engine (plugins.slots.contextEngine \"brainsurgeon\")"
		}
		fmt.Fprintf(c.m.Stderr, "This writes the plugin to %s and links it into %s with OpenClaw's CLI (daemonUrl %s, apiKeyFile %s%s); the config's bytes are backed up to %s.\n",
			p.PluginDir, p.ConfigPath, url, p.KeyFile, engine, p.BackupPath)
		if ok, answer := c.m.ask("Proceed?"); !ok {
			return fmt.Errorf("openclaw install: not confirmed (answered %q, expected y): nothing written", answer)
		}
	}
	res, err := openclawinstall.Install(ctx, openclawinstall.Env{}, o)
	if res != nil && err == nil {
		res.Next = openclawinstall.InstallNext(ctx, openclawinstall.Env{}, res.DaemonURL, agentsDirArg(fs, o.AgentsDir), o.Link || res.Linked)
	}
	if *asJSON {
		if res == nil {
			return err
		}
		return cli.WriteJSON(c.m.Stdout, res, err)
	}
	if res == nil {
		return err
	}
	w := c.m.Stdout
	fmt.Fprintf(w, "Plugin %s written to %s\n", res.PluginVersion, res.PluginDir)
	switch {
	case res.KeyCreated:
		fmt.Fprintf(w, "API key created in %s (0600; brainsurgeon serve reads it too: one already running for this OpenClaw root requires it within a second, without a restart, unless BRAINSURGEON_API_KEY_FILE names another file)\n", res.KeyFile)
	case res.KeyModeFixed:
		fmt.Fprintf(w, "API key kept: %s; its group or others could read it, so its mode is now 0600\n", res.KeyFile)
	default:
		fmt.Fprintf(w, "API key kept: %s\n", res.KeyFile)
	}
	if len(res.Commands) > 0 {
		fmt.Fprintf(w, "Ran: %s\n", strings.Join(res.Commands, "\n     "))
	}
	if err != nil {
		return err
	}
	if o.Link {
		fmt.Fprintf(w, "Linked into %s (backup of its bytes: %s; brainsurgeon openclaw uninstall restores them).\n", res.ConfigPath, res.BackupPath)
		if res.EngineSlot != "" {
			prev := res.EnginePrevious
			if prev == "" {
				prev = openclawinstall.EngineSlotDefault
			}
			fmt.Fprintf(w, "Context engine: plugins.slots.contextEngine is now %q (was %q; uninstall puts that back).\n", res.EngineSlot, prev)
		}
		printNext(w, res.Next)
		return nil
	}
	if res.Linked {
		fmt.Fprintf(w, "The plugin was linked into %s by an earlier install; the copy is updated.\n", res.ConfigPath)
		if res.EngineSlot != "" {
			fmt.Fprintf(w, "To select its context engine: brainsurgeon openclaw install --engine --link (or: openclaw config set plugins.slots.contextEngine %s)\n", res.EngineSlot)
		}
		printNext(w, res.Next)
		return nil
	}
	fmt.Fprintf(w, "\nOpenClaw's config was not changed. To load the plugin, merge this into %s:\n\n", res.ConfigPath)
	io.WriteString(w, res.Snippet)
	fmt.Fprintf(w, "\nor let OpenClaw do it (2026.8+; on 2026.7 leave out --force --accept-capabilities):\n\n  %s\n", res.LinkCommand)
	fmt.Fprintf(w, "  openclaw config set plugins.entries.brainsurgeon.config.daemonUrl %s\n", res.DaemonURL)
	fmt.Fprintf(w, "  openclaw config set plugins.entries.brainsurgeon.config.apiKeyFile %s\n", res.KeyFile)
	link := "brainsurgeon openclaw install --link"
	if res.EngineSlot != "" {
		fmt.Fprintf(w, "  openclaw config set plugins.slots.contextEngine %s\n", res.EngineSlot)
		link = "brainsurgeon openclaw install --engine --link"
	}
	fmt.Fprintf(w, "\nor run: %s\n\n", link)
	printNext(w, res.Next)
	return nil
}

func (c *openclawCommand) uninstall(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon openclaw uninstall", flag.ContinueOnError)
	var o openclawinstall.UninstallOptions
	fs.StringVar(&o.AgentsDir, "agents-dir", config.DefaultAgentsDir(), "the agents dir; its parent is the OpenClaw root")
	yes := fs.Bool("yes", false, "do not ask before changing OpenClaw's config")
	keep := fs.Bool("keep-placeholders", false, "leave the placeholders of offloaded tool results in the transcripts (default: write the results back)")
	fs.StringVar(&o.OpenClaw, "openclaw", "", "the openclaw executable (default: openclaw on PATH, else the one install ran)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, openclawUninstallUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	plan, err := openclawinstall.PlanUninstall(openclawinstall.Env{}, o.AgentsDir)
	if err != nil {
		return err
	}
	handLinked := &openclawinstall.HandLinkedError{ConfigPath: plan.ConfigPath, Commands: plan.Commands}
	if (plan.Linked || plan.HandLinked) && !*yes {
		if !isTerminalReader(c.m.Stdin) {
			if plan.HandLinked {
				return fmt.Errorf("openclaw uninstall: %w; nothing changed", handLinked)
			}
			return &cli.UsageError{Msg: "uninstall changes OpenClaw's config and needs confirmation: stdin is not a terminal, so pass --yes", Try: fs.Name() + " --help"}
		}
		q := "This takes the brainsurgeon plugin out of OpenClaw's config and removes its files. Proceed?"
		if plan.HandLinked {
			q = fmt.Sprintf("OpenClaw's config %s names the brainsurgeon plugin (added by hand). This runs %q to take it out, then removes the plugin's files. Proceed?",
				plan.ConfigPath, strings.Join(plan.Commands[:1], ""))
		}
		if ok, answer := c.m.ask(q); !ok {
			if plan.HandLinked {
				return fmt.Errorf("openclaw uninstall: not confirmed (answered %q, expected y): nothing changed; %w", answer, handLinked)
			}
			return fmt.Errorf("openclaw uninstall: not confirmed (answered %q, expected y): nothing changed", answer)
		}
	}
	o.UnlinkHandLinked = plan.HandLinked
	daemonURL := openclawinstall.DefaultDaemonURL
	if pc, ok, _ := openclawinstall.ReadPluginConfig(plan.ConfigPath); ok && pc.DaemonURL != "" {
		daemonURL = pc.DaemonURL
	} else if paths, perr := openclawinstall.ResolvePaths(openclawinstall.Env{}, o.AgentsDir, ""); perr == nil {
		if rec, ok, _ := openclawinstall.ReadRecord(paths.RecordPath); ok && rec.DaemonURL != "" {
			daemonURL = rec.DaemonURL
		}
	}
	res, err := openclawinstall.Uninstall(ctx, openclawinstall.Env{}, o)
	var co *cleanupOutput
	var next *openclawinstall.Next
	if res != nil && err == nil {
		var cerr error
		if co, cerr = cleanupSources(ctx, c.m, o.AgentsDir, daemonURL, *keep); cerr != nil {
			err = fmt.Errorf("openclaw uninstall: the plugin is uninstalled, but writing the offloaded tool results back failed: %w (run uninstall again to retry)", cerr)
		} else if co != nil && len(co.Errors) > 0 {
			err = fmt.Errorf("openclaw uninstall: the plugin is uninstalled, but %d sessions could not be cleaned up (see above; run uninstall again to retry)", len(co.Errors))
		}
		next = uninstallNext(res)
	}
	if *asJSON {
		if res == nil {
			return err
		}
		return cli.WriteJSON(c.m.Stdout, uninstallOutput{UninstallResult: res, Cleanup: co, Next: next}, err)
	}
	if res == nil {
		return err
	}
	w := c.m.Stdout
	defer func() {
		printCleanup(w, co)
		if res.Installed || len(res.Removed) > 0 {
			printNext(w, next)
		}
	}()
	if len(res.Commands) > 0 {
		fmt.Fprintf(w, "Ran: %s\n", strings.Join(res.Commands, "\n     "))
	}
	switch res.ConfigAction {
	case "restored":
		fmt.Fprintf(w, "Config %s restored to its bytes from before install.\n", res.ConfigPath)
	case "removed":
		fmt.Fprintf(w, "Config %s removed: there was none before install.\n", res.ConfigPath)
	case "entries_removed":
		fmt.Fprintf(w, "Config %s changed since install: only the brainsurgeon entries were taken out, other changes kept.\n", res.ConfigPath)
	}
	if res.BackupKept != "" {
		fmt.Fprintf(w, "The config's bytes from before install are kept in %s.\n", res.BackupKept)
	}
	if res.EngineSlot != "" {
		fmt.Fprintf(w, "Context engine: plugins.slots.contextEngine is %q.\n", res.EngineSlot)
	}
	for _, r := range res.Removed {
		fmt.Fprintf(w, "Removed %s\n", r)
	}
	if res.KeyKept != "" {
		fmt.Fprintf(w, "Kept the key file %s: install did not create it.\n", res.KeyKept)
	}
	if err == nil && !res.Installed && len(res.Removed) == 0 {
		fmt.Fprintln(w, "Nothing to uninstall: the plugin is not installed.")
	}
	return err
}

func (c *openclawCommand) status(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon openclaw status", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "the agents dir; its parent is the OpenClaw root")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, openclawStatusUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	st, err := openclawinstall.Status(openclawinstall.Env{}, *agentsDir)
	if err != nil {
		return err
	}
	openclawinstall.CheckSystem(ctx, openclawinstall.Env{}, st, agentsDirArg(fs, *agentsDir))
	err = statusError(st)
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, st, err)
	}
	w := c.m.Stdout
	yn := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	switch {
	case !st.Installed:
		fmt.Fprintf(w, "Plugin:      not installed (%s); this binary carries %s\n", st.PluginDir, st.EmbeddedVersion)
	case st.Current:
		fmt.Fprintf(w, "Plugin:      %s in %s (current)\n", st.InstalledVersion, st.PluginDir)
	default:
		fmt.Fprintf(w, "Plugin:      %s in %s; this binary carries %s (brainsurgeon openclaw install updates it)\n", st.InstalledVersion, st.PluginDir, st.EmbeddedVersion)
	}
	cfg := "missing"
	if st.ConfigExists {
		cfg = "names the plugin's dir: " + yn(st.ConfigNamesPlugin) + ", has plugins.entries.brainsurgeon: " + yn(st.ConfigHasEntry)
	}
	fmt.Fprintf(w, "Config:      %s (%s)\n", st.ConfigPath, cfg)
	fmt.Fprintf(w, "Linked:      %s\n", yn(st.Linked))
	engine := "OpenClaw's own or another plugin's"
	switch {
	case st.EngineSelected && st.EngineByInstall:
		prev := st.EnginePrevious
		if prev == "" {
			prev = openclawinstall.EngineSlotDefault
		}
		engine = fmt.Sprintf("BrainSurgeon's, selected by install --engine; uninstall puts back %q", prev)
	case st.EngineSelected:
		engine = "BrainSurgeon's"
	case st.EngineSlot == openclawinstall.EngineSlotDefault:
		engine = "OpenClaw's own; brainsurgeon openclaw install --engine --link selects BrainSurgeon's"
	}
	fmt.Fprintf(w, "Engine:      %s (%s)\n", st.EngineSlot, engine)
	fmt.Fprintf(w, "Key file:    %s (exists: %s)\n", st.KeyFile, yn(st.KeyFileExists))
	if st.DaemonURL != "" {
		fmt.Fprintf(w, "Daemon:      %s\n", st.DaemonURL)
	}
	printChecks(w, st)
	return err
}

// agentsDirArg returns the --agents-dir the user gave (its value, to
// repeat in the commands printed), or "" when the default was used.
func agentsDirArg(fs *flag.FlagSet, value string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "agents-dir" })
	if !given {
		return ""
	}
	return value
}

// statusError is the error of a status whose checks failed: it names them
// (the text output lists their fixes).
func statusError(st *openclawinstall.StatusResult) error {
	if st.Healthy {
		return nil
	}
	var failed []string
	for _, ch := range st.Checks {
		if !ch.OK {
			failed = append(failed, ch.Name+" ("+ch.Detail+")")
		}
	}
	return fmt.Errorf("the plugin and the daemon are not working together: %d of %d checks failed: %s", len(failed), len(st.Checks), strings.Join(failed, "; "))
}

// printChecks prints the end-to-end checks, each failed one with its fix,
// and the verdict.
func printChecks(w io.Writer, st *openclawinstall.StatusResult) {
	if len(st.Checks) == 0 {
		return
	}
	fmt.Fprintln(w, "Checks:")
	failed := 0
	for _, ch := range st.Checks {
		mark := "ok  "
		if !ch.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "  %s  %-19s %s\n", mark, ch.Name, ch.Detail)
		if !ch.OK && ch.Fix != "" {
			fmt.Fprintf(w, "        %-19s fix: %s\n", "", ch.Fix)
		}
	}
	if failed == 0 {
		fmt.Fprintf(w, "Healthy:     yes (%d checks passed)\n", len(st.Checks))
	} else {
		fmt.Fprintf(w, "Healthy:     no (%d of %d checks failed)\n", failed, len(st.Checks))
	}
}
