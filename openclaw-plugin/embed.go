// Package openclawplugin holds BrainSurgeon's OpenClaw plugin and its pi
// extension (pi.js, which shares the plugin's modules), embedded so that the
// brainsurgeon binary can write them out (brainsurgeon openclaw install).
// Both are plain ESM JavaScript with no build step: the files embedded here
// are the files `npm pack` ships.
package openclawplugin

import (
	"embed"
	"encoding/json"
	"io/fs"
)

//go:embed package.json openclaw.plugin.json index.js pi.js config.js client.js tools.js offload.js wire.js engine.js README.md
var files embed.FS

// Files returns the plugin's files, as `npm pack` ships them: package.json,
// openclaw.plugin.json, the entry points index.js (OpenClaw's) and pi.js
// (pi's, which package.json's "pi" key names) and the modules they import
// (config.js, client.js, tools.js, offload.js, wire.js, engine.js) and
// README.md, at the root of the FS.
func Files() fs.FS { return files }

// Version returns the version field of the embedded package.json, or "" if
// it cannot be read.
func Version() string {
	b, err := files.ReadFile("package.json")
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.Version
}
