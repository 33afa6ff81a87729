package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// LoadConfig checks that the agents dir exists (backend.CheckAgentsDir:
// every command that loads the config works on the agents dir, and a
// wrong path must be the first thing it reports, not a config it then
// fails to find), then reads the config beside agentsDir and warns on
// stderr about each unknown field, with the nearest known name. With lenient, a config
// that fails validation is reported on stderr and its valid fields used
// (restoring must not depend on a perfect config); otherwise that is an
// error. Errors name the file once.
func LoadConfig(ctx context.Context, stderr io.Writer, agentsDir string, log bs.Logger, lenient bool) (config.Config, config.FileInfo, error) {
	if err := backend.CheckAgentsDir(agentsDir); err != nil {
		return config.Config{}, config.FileInfo{Path: config.Path(agentsDir)}, err
	}
	cfg, info, err := config.LoadFile(ctx, agentsDir, log)
	for _, name := range info.Unknown {
		hint := ""
		if near := config.NearestField(name); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		fmt.Fprintf(stderr, "warning: unknown field %q in %s%s; it is ignored\n", name, info.Path, hint)
	}
	if err != nil {
		var ve *config.ValidationError
		if !lenient || !errors.As(err, &ve) {
			return cfg, info, err
		}
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	return cfg, info, nil
}

// DisabledError is the error of a pass refused because smart pruning is
// disabled: it says where to enable it, and that the file does not exist
// when it does not.
func DisabledError(info config.FileInfo) error {
	if !info.Exists {
		return fmt.Errorf("smart pruning is disabled: there is no config file %s (the defaults apply, and they have it off); create it with {\"enabled\": true}, or pass --force to run this pass anyway", info.Path)
	}
	if slices.Contains(info.Added, "enabled") {
		return fmt.Errorf("smart pruning is disabled (%s has no \"enabled\" field, and the default is false); add \"enabled\": true there, or pass --force to run this pass anyway", info.Path)
	}
	return fmt.Errorf("smart pruning is disabled (\"enabled\": false in %s); set \"enabled\": true there, or pass --force to run this pass anyway", info.Path)
}
