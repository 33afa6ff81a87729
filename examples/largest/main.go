// Command largest lists the largest extractable values of a session: the
// tool outputs, thinking blocks and images that make a transcript heavy. It
// uses the brainsurgeon library the way another Go program would.
//
//	go run ./examples/largest testdata/demo/agents agent:main:main
//	go run ./examples/largest -n 20 ~/.openclaw/agents main/1d9efd24-3d45-430b-a703-e713c1679ce1
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

type value struct {
	line    int
	entry   string
	pointer string
	trigger string
	bytes   int
}

func main() {
	n := flag.Int("n", 10, "how many values to list")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: largest [-n N] <agents-dir> <session>")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(context.Background(), flag.Arg(0), flag.Arg(1), *n); err != nil {
		fmt.Fprintln(os.Stderr, "largest:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, agentsDir, name string, n int) error {
	// Open the installation: JSONL transcripts and OpenClaw SQLite
	// stores alike. Then find the session: by key, by agent/id, by id or
	// by path.
	set, err := backend.Open(ctx, agentsDir, backend.Options{})
	if err != nil {
		return err
	}
	ref, err := set.Store.Resolve(ctx, name)
	if err != nil {
		return err
	}
	// Open indexes the transcript (tree, active path) without keeping it
	// in memory; Entries streams the lines again.
	tr, err := set.Store.Open(ctx, ref, nil)
	if err != nil {
		return err
	}
	var values []value
	for e, err := range tr.Entries(ctx) {
		if err != nil {
			return err
		}
		for _, c := range entry.Classify(e) {
			values = append(values, value{e.Line, e.ID, c.Pointer, string(c.Trigger), c.Len()})
		}
	}
	sort.Slice(values, func(i, j int) bool { return values[i].bytes > values[j].bytes })
	if len(values) > n {
		values = values[:n]
	}
	fmt.Printf("%s: %d lines, %d context messages\n", ref, len(tr.Nodes()), tr.Context().Count())
	for _, v := range values {
		fmt.Printf("%8d bytes  %-11s line %-5d entry %-8s %s\n", v.bytes, v.trigger, v.line, v.entry, v.pointer)
	}
	return nil
}
