// Package clitest holds what the testscript tests of the commands share:
// the fixture (a copy of testdata/demo/agents with pruning enabled and no
// waits) and commands that check JSON output. Only tests import it.
package clitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
)

// Config is the config the fixture writes beside $AGENTS: pruning enabled,
// no idle wait, no age protection.
const Config = `{"enabled": true, "idle_seconds": 0, "age_threshold_hours": 0}` + "\n"

// Params returns testscript parameters for the scripts in dir. Each
// script starts with $WORK/agents, a copy of demoAgents, and
// $WORK/.brainsurgeon/config.json (Config); $AGENTS and
// BRAINSURGEON_AGENTS_DIR name the agents dir. cmds are added to the
// JSON commands (jsonkeys, jsonvalue) and side.
func Params(dir, demoAgents string, cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) testscript.Params {
	all := map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"jsonkeys":  JSONKeys,
		"jsonvalue": JSONValue,
		"side":      Side,
	}
	for k, v := range cmds {
		all[k] = v
	}
	return testscript.Params{
		Dir:  dir,
		Cmds: all,
		Setup: func(env *testscript.Env) error {
			agents := filepath.Join(env.WorkDir, "agents")
			if err := os.CopyFS(agents, os.DirFS(demoAgents)); err != nil {
				return err
			}
			cfgDir := filepath.Join(env.WorkDir, ".brainsurgeon")
			if err := os.MkdirAll(cfgDir, 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(Config), 0o600); err != nil {
				return err
			}
			env.Setenv("AGENTS", agents)
			env.Setenv("BRAINSURGEON_AGENTS_DIR", agents)
			env.Setenv("AGENTS_DIR", "")
			env.Setenv("BRAINSURGEON_LOG", "")
			return nil
		},
	}
}

// lookup reads FILE[:path] and returns the JSON value at path: member
// names and array indexes separated by dots ("sessions.0.result").
func lookup(ts *testscript.TestScript, spec string) any {
	file, path, _ := strings.Cut(spec, ":")
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile(file)), &v); err != nil {
		ts.Fatalf("%s: not one JSON value: %v", file, err)
	}
	if path == "" {
		return v
	}
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				ts.Fatalf("%s: no member %q", spec, seg)
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				ts.Fatalf("%s: no element %q of %d", spec, seg, len(x))
			}
			v = x[i]
		default:
			ts.Fatalf("%s: %q is inside a %T", spec, seg, v)
		}
	}
	return v
}

// JSONKeys is the command "jsonkeys FILE[:path] name...": the JSON object
// in FILE (at path) has exactly these member names, in any order. With !,
// it does not.
func JSONKeys(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: jsonkeys FILE[:path] name...")
	}
	obj, ok := lookup(ts, args[0]).(map[string]any)
	if !ok {
		ts.Fatalf("%s: not a JSON object", args[0])
	}
	var got []string
	for k := range obj {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Clone(args[1:])
	slices.Sort(want)
	same := slices.Equal(got, want)
	switch {
	case same && neg:
		ts.Fatalf("%s: names are %s", args[0], strings.Join(got, " "))
	case !same && !neg:
		ts.Fatalf("%s: names are\n  %s\nwant\n  %s", args[0], strings.Join(got, " "), strings.Join(want, " "))
	}
}

// JSONValue is the command "jsonvalue FILE[:path] JSON": the value in FILE
// (at path) is JSON (compared as decoded values, so 12 is not "12").
func JSONValue(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonvalue FILE[:path] JSON")
	}
	got := lookup(ts, args[0])
	var want any
	if err := json.Unmarshal([]byte(args[1]), &want); err != nil {
		ts.Fatalf("jsonvalue: %q is not JSON: %v", args[1], err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if same := string(g) == string(w); same == neg {
		ts.Fatalf("%s is %s; want %s%s", args[0], g, map[bool]string{true: "not ", false: ""}[neg], w)
	}
}

// Side works on the side record of an entry in a side dir, whatever its
// storage (pack or per-entry file):
//
//	side has DIR ID          the entry has a record (! : it has none)
//	side rm DIR ID           delete the record
//	side corrupt DIR ID      damage the stored record
//	side save DIR ID FILE    copy the record's JSON to FILE
//	side load DIR FILE       store the record in FILE
func Side(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: side has|rm|corrupt|save|load DIR ...")
	}
	dir := ts.MkAbs(args[1])
	if args[0] == "has" {
		if has := sidetest.Location(dir, args[2]) != ""; has == neg {
			ts.Fatalf("entry %s has a record: %v", args[2], has)
		}
		return
	}
	if neg {
		ts.Fatalf("side %s does not support !", args[0])
	}
	var err error
	switch {
	case args[0] == "rm":
		err = sidetest.RemoveRecord(dir, args[2])
	case args[0] == "corrupt":
		_, err = sidetest.CorruptRecord(dir, args[2])
	case args[0] == "save" && len(args) == 4:
		var rec *extract.Record
		if rec, _, err = sidetest.ReadRecord(dir, args[2]); err == nil {
			var data []byte
			if data, err = extract.EncodeRecord(rec); err == nil {
				err = os.WriteFile(ts.MkAbs(args[3]), data, 0o600)
			}
		}
	case args[0] == "load":
		var rec *extract.Record
		if rec, err = extract.DecodeRecord([]byte(ts.ReadFile(args[2]))); err == nil {
			err = sidetest.WriteRecord(dir, rec)
		}
	default:
		ts.Fatalf("usage: side has|rm|corrupt|save|load DIR ...")
	}
	ts.Check(err)
}
