// Command brainsurgeon keeps OpenClaw and pi agent transcripts lean: it
// inspects sessions, moves large old values to a side store and brings
// them back, verifies, compacts, and runs the daemon (schedules,
// retention, REST API, web UI). See `brainsurgeon help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version may be set at build time with -ldflags "-X main.version=…";
// otherwise "version" reports the module version or the VCS revision
// recorded in the build information (see cli.Version).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := (&Main{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin}).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
