package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/service"
)

const serviceUsage = `Usage: brainsurgeon service <subcommand> [flags]

Runs the daemon (brainsurgeon serve) as a service of your user, started at
login and restarted on failure: a systemd user unit on Linux
(~/.config/systemd/user/brainsurgeon.service, $XDG_CONFIG_HOME honoured), a
launchd agent on macOS (~/Library/LaunchAgents/dev.brainsurgeon.serve.plist).
Never needs root.

Subcommands:
  install    write the unit and start it
  uninstall  stop it and remove the unit
  status     whether the unit exists and runs

Run "brainsurgeon help service <subcommand>" for a subcommand's flags.
`

const serviceInstallUsage = `Usage: brainsurgeon service install [--agents-dir DIR] [--addr A] [--dry-run] [--json]

Writes the unit running "<this binary> serve --addr A --agents-dir DIR", then
runs
"systemctl --user daemon-reload" and "systemctl --user enable --now
brainsurgeon.service" (and "restart" when the unit existed; macOS: "launchctl
bootstrap gui/<uid> <plist>"). When
systemctl --user cannot reach your user manager, the unit stays written and
the commands to run are printed. On a machine without systemd it says so,
writes nothing and exits 1. --dry-run prints the unit and the commands only
(exit 0; without systemd it says so after the unit).

serve reads the API key file <root>/.brainsurgeon/api.key (root: the agents
dir's parent; brainsurgeon openclaw install creates it) by itself whenever it
exists, so the unit names no key file and a daemon keeps starting after the
file is removed. Only a BRAINSURGEON_API_KEY_FILE set when you run this, naming
another file, is written into the unit (serve then requires that file).

Examples:
  brainsurgeon service install
  brainsurgeon service install --addr 127.0.0.1:9000 --dry-run

Flags:
`

const serviceUninstallUsage = `Usage: brainsurgeon service uninstall [--dry-run] [--json]

Stops and disables the service ("systemctl --user disable --now", macOS
"launchctl bootout") and removes its unit. Nothing installed is no error.

Flags:
`

const serviceStatusUsage = `Usage: brainsurgeon service status [--json]

Shows whether the unit exists, where, and what the service manager says of it.
Reads only.

Flags:
`

type serviceCommand struct{ m *Main }

func (c *serviceCommand) Run(ctx context.Context, args []string) error {
	return installCommands(ctx, c.m, "service", serviceUsage, args, c.install, c.uninstall, c.status)
}

// serviceEnv is the OS the service commands act on (a variable so that
// tests stand in for it).
var serviceEnv = func() service.Env { return service.Env{GOOS: runtime.GOOS} }

// serviceKeyFile returns the key file the unit names: none when env (the
// BRAINSURGEON_API_KEY_FILE of the shell running service install) is unset
// or names serve's default def, which serve reads by itself when it exists
// (a unit naming it would restart-loop once the file is gone, because
// serve requires a file named explicitly). Another file is named, and must
// exist now.
func serviceKeyFile(env, def string) (string, error) {
	env = strings.TrimSpace(env)
	if env == "" {
		return "", nil
	}
	abs, err := filepath.Abs(env)
	if err != nil {
		return "", err
	}
	if abs == filepath.Clean(def) {
		return "", nil
	}
	if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("BRAINSURGEON_API_KEY_FILE=%s: expected an existing key file, which serve requires when it is named (unset it to use %s when it exists): %v", env, def, describeKeyFile(fi, err))
	}
	return abs, nil
}

func describeKeyFile(fi os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return "found " + fi.Mode().Type().String()
}

func (c *serviceCommand) install(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon service install", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir the daemon serves")
	addr := fs.String("addr", "127.0.0.1:8000", "the daemon's listen address")
	dry := fs.Bool("dry-run", false, "print the unit and the commands; write and run nothing")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, serviceInstallUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return fmt.Errorf("the path of this binary: %w", err)
	}
	dir, err := filepath.Abs(*agentsDir)
	if err != nil {
		return err
	}
	spec := service.Spec{Binary: bin, Addr: *addr, AgentsDir: dir}
	key := filepath.Join(filepath.Dir(dir), filepath.FromSlash(serveKeyFileName))
	if spec.KeyFile, err = serviceKeyFile(os.Getenv("BRAINSURGEON_API_KEY_FILE"), key); err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: fs.Name() + " --help"}
	}
	_, keyErr := os.Stat(key)
	if err := spec.Check(); err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: fs.Name() + " --help"}
	}
	res, err := service.Install(ctx, serviceEnv(), spec, *dry)
	if res == nil {
		return err
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, res, err)
	}
	w := c.m.Stdout
	if *dry {
		if res.File != "" {
			fmt.Fprintf(w, "Would write %s:\n\n%s\n", res.File, res.Content)
		}
		if res.Problem != "" {
			// No systemd here: the preview is for a machine that runs it.
			fmt.Fprintf(w, "Note: %s.\nA real install here would write nothing and exit 1; where the service manager runs, it writes the file above, then runs:\n  %s\n",
				res.Problem, strings.Join(res.Todo, "\n  "))
			return err
		}
		if len(res.Todo) > 0 {
			fmt.Fprintf(w, "Then run:\n  %s\n", strings.Join(res.Todo, "\n  "))
		}
		return err
	}
	if err != nil {
		if errors.Is(err, service.ErrNoServiceManager) {
			return fmt.Errorf("service install: %w; nothing written", err)
		}
		return err
	}
	fmt.Fprintf(w, "Wrote %s (runs %s serve --addr %s --agents-dir %s)\n", res.File, bin, *addr, dir)
	if spec.KeyFile == "" && keyErr != nil {
		fmt.Fprintf(w, "No key file at %s yet: the daemon's API takes writes without a key until it exists (brainsurgeon openclaw install creates it; the daemon picks it up by itself, no restart).\n", key)
	}
	for _, r := range res.Ran {
		fmt.Fprintf(w, "Ran: %s\n", r)
	}
	if len(res.Todo) > 0 {
		fmt.Fprintf(w, "Your user's service manager could not be reached; run these in your login session:\n  %s\n", strings.Join(res.Todo, "\n  "))
	} else {
		fmt.Fprintf(w, "The daemon runs on http://%s\n", *addr)
	}
	return nil
}

func (c *serviceCommand) uninstall(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon service uninstall", flag.ContinueOnError)
	dry := fs.Bool("dry-run", false, "print what would be done; change nothing")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, serviceUninstallUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	res, err := service.Uninstall(ctx, serviceEnv(), *dry)
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, res, err)
	}
	w := c.m.Stdout
	for _, r := range res.Ran {
		fmt.Fprintf(w, "Ran: %s\n", r)
	}
	switch {
	case err != nil:
		if len(res.Todo) > 0 {
			fmt.Fprintf(w, "Could not run (run them in your login session): %s\n", strings.Join(res.Todo, "; "))
		}
		return err
	case !res.Installed:
		fmt.Fprintf(w, "Nothing to uninstall: %s does not exist.\n", res.File)
	case *dry:
		fmt.Fprintf(w, "Would run:\n  %s\nand remove %s\n", strings.Join(res.Todo, "\n  "), res.File)
	default:
		if len(res.Todo) > 0 {
			fmt.Fprintf(w, "Could not run (run them in your login session): %s\n", strings.Join(res.Todo, "; "))
		}
		if res.Removed {
			fmt.Fprintf(w, "Removed %s\n", res.File)
		}
	}
	return nil
}

func (c *serviceCommand) status(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon service status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, serviceStatusUsage)
	if err != nil {
		return err
	}
	if err := noArgs(pos, fs.Name()); err != nil {
		return err
	}
	res, err := service.Status(ctx, serviceEnv())
	if err != nil {
		return err
	}
	res.Content = ""
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, res, nil)
	}
	w := c.m.Stdout
	if res.File == "" {
		fmt.Fprintf(w, "No service manager: %s\n", res.Problem)
		return nil
	}
	inst := "not installed"
	if res.Installed {
		inst = "installed"
	}
	fmt.Fprintf(w, "Unit:    %s (%s, %s)\n", res.File, res.Kind, inst)
	if res.Problem != "" {
		fmt.Fprintf(w, "Manager: %s\n", res.Problem)
	} else {
		fmt.Fprintf(w, "Active:  %s\n", res.Active)
	}
	return nil
}
