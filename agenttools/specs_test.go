package agenttools_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// pluginDir is the OpenClaw plugin's directory.
const pluginDir = "../openclaw-plugin"

// pluginSpecsScript prints the plugin's tools as JSON: TOOL_NAMES,
// OLD_ARGUMENT_NAMES and each tool's label, description and parameters
// from TOOL_SPECS, read from whichever .js file of the plugin's directory
// declares TOOL_SPECS (the file may move as the plugin is split into
// modules). When that file does not export TOOL_SPECS, the specs are read
// through its exported makeTool; TOOL_NAMES, OLD_ARGUMENT_NAMES and
// makeTool may come from that file, from index.js or from another module
// that exports them.
const pluginSpecsScript = `
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
const dir = process.argv[1];
const files = readdirSync(dir).filter((f) => f.endsWith(".js")).sort();
const holders = files.filter((f) => /\bTOOL_SPECS\s*=/.test(readFileSync(join(dir, f), "utf8")));
if (holders.length !== 1) throw new Error("expected one .js file of " + dir + " declaring TOOL_SPECS, found " + holders.length + ": " + holders.join(", "));
const file = holders[0];
const mods = [await import(pathToFileURL(join(dir, file)).href)];
if (file !== "index.js" && files.includes("index.js")) mods.push(await import(pathToFileURL(join(dir, "index.js")).href));
for (const f of files) {
  // Another module that exports one of the names (after a split).
  if (f === file || f === "index.js") continue;
  if (/export\s+(const|function)\s+(TOOL_NAMES|OLD_ARGUMENT_NAMES|makeTool)\b/.test(readFileSync(join(dir, f), "utf8"))) mods.push(await import(pathToFileURL(join(dir, f)).href));
}
const pick = (name) => mods.map((m) => m[name]).find((v) => v !== undefined);
const names = pick("TOOL_NAMES");
if (!Array.isArray(names)) throw new Error("TOOL_NAMES: expected an array exported by " + file + " or index.js, found none");
let specs = mods[0].TOOL_SPECS;
if (specs === undefined) {
  const makeTool = pick("makeTool");
  if (typeof makeTool !== "function") throw new Error(file + " exports neither TOOL_SPECS nor makeTool (nor does index.js export makeTool)");
  specs = {};
  for (const name of names) {
    const t = makeTool(name, {}, {});
    specs[name] = { label: t.label, description: t.description, parameters: t.parameters };
  }
}
console.log(JSON.stringify({ file, names, specs, old: pick("OLD_ARGUMENT_NAMES") ?? {} }));
`

// pluginTools is what pluginSpecsScript prints.
type pluginTools struct {
	File  string
	Names []string
	Specs map[string]struct {
		Label       string
		Description string
		Parameters  any
	}
	Old map[string][]string
}

// readPluginTools runs pluginSpecsScript with node.
func readPluginTools(t *testing.T) pluginTools {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if oracle.Required() {
			t.Fatalf("node is not on PATH (CI demands it): the plugin's tool specs cannot be read: %v", err)
		}
		t.Skipf("node is not on PATH: the plugin's tool specs cannot be read: %v", err)
	}
	dir, err := filepath.Abs(pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--input-type=module", "-e", pluginSpecsScript, dir)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node reading the plugin's tool specs: %v\n%s", err, stderr)
	}
	var p pluginTools
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("node printed %.300q: %v", out, err)
	}
	return p
}

// normal returns v as encoding/json decodes its JSON (numbers float64,
// slices []any), so that Go data and JavaScript's compare.
func normal(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPluginToolSpecs checks that the plugin declares exactly the tools
// of agenttools.Specs, in the same order, with the same label,
// description, JSON Schema and old argument names: the Go specs are the
// reference, and a tool added on one side only fails here.
func TestPluginToolSpecs(t *testing.T) {
	p := readPluginTools(t)
	specs := agenttools.Specs()
	if !slices.Equal(p.Names, agenttools.Names()) {
		t.Errorf("TOOL_NAMES of the plugin is %q, agenttools.Names() is %q: expected the same tools in the same order", p.Names, agenttools.Names())
	}
	var jsNames []string
	for name := range p.Specs {
		jsNames = append(jsNames, name)
	}
	sort.Strings(jsNames)
	goNames := agenttools.Names()
	sort.Strings(goNames)
	if !slices.Equal(jsNames, goNames) {
		t.Errorf("TOOL_SPECS in openclaw-plugin/%s holds %q, agenttools.Specs %q", p.File, jsNames, goNames)
	}
	for _, s := range specs {
		js, ok := p.Specs[s.Name]
		if !ok {
			continue
		}
		if js.Label != s.Label {
			t.Errorf("%s: label: openclaw-plugin/%s has %q, agenttools %q", s.Name, p.File, js.Label, s.Label)
		}
		if js.Description != s.Description {
			t.Errorf("%s: description differs:\nopenclaw-plugin/%s:\n\t%s\nagenttools:\n\t%s", s.Name, p.File, js.Description, s.Description)
		}
		if want := normal(t, s.Parameters); !reflect.DeepEqual(js.Parameters, want) {
			got, _ := json.Marshal(js.Parameters)
			w, _ := json.Marshal(want)
			t.Errorf("%s: parameters differ:\nopenclaw-plugin/%s:\n\t%s\nagenttools:\n\t%s", s.Name, p.File, got, w)
		}
		if !slices.Equal(p.Old[s.Name], s.OldArguments) {
			t.Errorf("%s: OLD_ARGUMENT_NAMES has %q, agenttools %q", s.Name, p.Old[s.Name], s.OldArguments)
		}
	}
	for name := range p.Old {
		if _, ok := agenttools.Lookup(name); !ok {
			t.Errorf("OLD_ARGUMENT_NAMES names %s, which agenttools.Specs does not have", name)
		}
	}
}

// TestManifestTools checks the plugin's manifest against agenttools.Specs:
// contracts.tools lists the tools in order, and toolMetadata has each
// tool's profiles, replaySafe true and sideEffecting as the spec says.
func TestManifestTools(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(pluginDir, "openclaw.plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Contracts struct {
			Tools []string `json:"tools"`
		} `json:"contracts"`
		ToolMetadata map[string]struct {
			Profiles      []string `json:"profiles"`
			ReplaySafe    bool     `json:"replaySafe"`
			SideEffecting bool     `json:"sideEffecting"`
		} `json:"toolMetadata"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("openclaw.plugin.json: %v", err)
	}
	if !slices.Equal(m.Contracts.Tools, agenttools.Names()) {
		t.Errorf("the manifest's contracts.tools is %q, agenttools.Names() %q", m.Contracts.Tools, agenttools.Names())
	}
	for _, s := range agenttools.Specs() {
		md, ok := m.ToolMetadata[s.Name]
		switch {
		case !ok:
			t.Errorf("the manifest's toolMetadata has no %s", s.Name)
		case !slices.Equal(md.Profiles, s.Profiles) || !md.ReplaySafe || md.SideEffecting != s.SideEffecting:
			t.Errorf("the manifest's toolMetadata.%s is %+v; agenttools: profiles %q, replaySafe true, sideEffecting %v", s.Name, md, s.Profiles, s.SideEffecting)
		}
	}
	for name := range m.ToolMetadata {
		if _, ok := agenttools.Lookup(name); !ok {
			t.Errorf("the manifest's toolMetadata has %s, which agenttools.Specs does not have", name)
		}
	}
}
