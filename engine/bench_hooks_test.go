package engine_test

import "github.com/brainsurgeon/brainsurgeon/engine"

// dropCaches drops what the engine holds of the sessions whose state
// lives under dir, so that a benchmark's first call starts from nothing.
func dropCaches(dir string) { engine.ResetCaches(dir) }
