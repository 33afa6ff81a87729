package daemon

import "github.com/brainsurgeon/brainsurgeon/api"

// ControlOf returns the daemon as the API's Control.
func ControlOf(d *Daemon) api.Control { return control{d} }
