// Package openclawplugin holds BrainSurgeon's OpenClaw plugin, embedded so
// that the brainsurgeon binary can write it out (brainsurgeon openclaw
// install). The plugin is plain ESM JavaScript with no build step: the files
// embedded here are the files `npm pack` ships.
package openclawplugin

import (
	"embed"
	"encoding/json"
	"io/fs"
)

//go:embed package.json openclaw.plugin.json index.js config.js client.js tools.js offload.js wire.js engine.js README.md
var files embed.FS

// Files returns the plugin's files, as `npm pack` ships them: package.json,
// openclaw.plugin.json, the entry point index.js and the modules it imports
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
