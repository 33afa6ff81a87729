package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
)

// ErrReadOnly is returned by every operation that would write while the
// daemon runs in read-only mode (BRAINSURGEON_READONLY, which only the
// environment sets): config changes and manual runs. An API answers it with
// 403.
var ErrReadOnly = errors.New("read-only mode: nothing is written (BRAINSURGEON_READONLY is set)")

// ConfigService holds the runtime config: it loads it, validates every
// change and saves it atomically (package config), and tells its subscribers
// (the daemon's scheduler) about each change at once. It is safe for
// concurrent use.
type ConfigService struct {
	agentsDir string
	readOnly  bool
	log       bs.Logger

	mu   sync.Mutex
	cur  config.Config
	subs []func(old, new config.Config)
}

// OpenConfig loads the config of agentsDir (see config.Path). Unless
// readOnly, a missing file is created with the defaults and a file that
// lacked fields is saved with them added, and one that held obsolete
// fields is saved without them (the upgrade is logged). A file
// that fails validation is an error naming the file and every bad field:
// the daemon does not start on a config it cannot trust. A nil log
// discards.
func OpenConfig(ctx context.Context, agentsDir string, readOnly bool, log bs.Logger) (*ConfigService, error) {
	log = bs.LoggerOrDiscard(log)
	c, info, err := config.LoadFile(ctx, agentsDir, log)
	if err != nil {
		return nil, err
	}
	for _, name := range info.Unknown {
		log.Warn(fmt.Sprintf("Config: unknown field %q in %s is ignored", name, info.Path), "field", name, "nearest", config.NearestField(name))
	}
	if !readOnly && (!info.Exists || len(info.Added) > 0 || len(info.Obsolete) > 0) {
		if err := config.Save(agentsDir, c); err != nil {
			return nil, err
		}
		if !info.Exists {
			log.Info("Config created with the defaults", "path", info.Path)
		} else {
			log.Info("Config upgraded", "path", info.Path, "added", info.Added, "removed", info.Obsolete)
		}
	}
	return &ConfigService{agentsDir: agentsDir, readOnly: readOnly, log: log, cur: c}, nil
}

// Path returns the config file's path.
func (s *ConfigService) Path() string { return config.Path(s.agentsDir) }

// ReadOnly reports whether changes are refused.
func (s *ConfigService) ReadOnly() bool { return s.readOnly }

// Get returns the current config. The copy is the caller's: its
// TriggerTypes slice is new.
func (s *ConfigService) Get() config.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cur
	c.TriggerTypes = slices.Clone(c.TriggerTypes)
	return c
}

// Set applies patch, a JSON object holding some of the config's fields
// (the body of POST /api/config), validates every field and saves the
// result atomically, then tells the subscribers. It returns the new
// config.
//
// On error nothing is saved and nothing changes (the schedules keep their
// old expressions): a *config.ValidationError (wrapping
// brainsurgeon.ErrInvalid, with one message per bad or unknown field), an
// error wrapping ErrInvalid for a body that is not a JSON object,
// ErrReadOnly in read-only mode, or the save's error. The change is logged
// at info level with the actor of ctx (logging.WithActor), when known.
func (s *ConfigService) Set(ctx context.Context, patch []byte) (config.Config, error) {
	if s.readOnly {
		return s.Get(), ErrReadOnly
	}
	return s.update(ctx, func(c *config.Config) error { return c.Merge(patch) })
}

// Replace validates c and saves it as the whole config, as Set does.
func (s *ConfigService) Replace(ctx context.Context, c config.Config) (config.Config, error) {
	if s.readOnly {
		return s.Get(), ErrReadOnly
	}
	return s.update(ctx, func(n *config.Config) error {
		if err := c.Validate(); err != nil {
			return err
		}
		*n = c
		return nil
	})
}

// Subscribe registers fn, called after every saved change with the old and
// the new config. Calls for changes made at the same time may come in any
// order, so fn should act on Get's current config rather than on new
// alone. fn must not call Set or Replace.
func (s *ConfigService) Subscribe(fn func(old, new config.Config)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, fn)
}

// update changes the config under the lock and saves it, then tells the
// subscribers (outside the lock: they may call Get).
func (s *ConfigService) update(ctx context.Context, change func(*config.Config) error) (config.Config, error) {
	if s.readOnly {
		return s.Get(), ErrReadOnly
	}
	s.mu.Lock()
	// side_store is changed only by `brainsurgeon side migrate`, which
	// writes the file itself once every value has arrived: the file's
	// value is the current one, and a save never writes back an older one.
	if disk, err := config.Load(ctx, s.agentsDir, nil); err == nil {
		s.cur.SideStore = disk.SideStore
	}
	old := s.cur
	n := old
	n.TriggerTypes = slices.Clone(old.TriggerTypes)
	if err := change(&n); err != nil {
		s.mu.Unlock()
		return s.Get(), err
	}
	if config.IsLocalSideStore(n.SideStore) != config.IsLocalSideStore(old.SideStore) ||
		(!config.IsLocalSideStore(n.SideStore) && n.SideStore != old.SideStore) {
		s.mu.Unlock()
		return s.Get(), &config.ValidationError{Errors: []config.FieldError{{Field: "side_store",
			Message: fmt.Sprintf("is %q and changes only with `brainsurgeon side migrate --to %s`, which moves every value first, got %q", old.SideStore, orLocal(n.SideStore), n.SideStore)}}}
	}
	if err := config.Save(s.agentsDir, n); err != nil {
		s.mu.Unlock()
		return s.Get(), err
	}
	s.cur = n
	subs := slices.Clone(s.subs)
	s.mu.Unlock()
	if changed := changedFields(old, n); len(changed) > 0 && !onlyRunTimes(changed) {
		args := []any{"fields", changed, "path", s.Path()}
		if a := logging.ActorFrom(ctx); a != "" {
			args = append(args, logging.KeyActor, a)
		}
		s.log.Info("Config changed", args...)
	}
	for _, fn := range subs {
		fn(old, n)
	}
	c := n
	c.TriggerTypes = slices.Clone(n.TriggerTypes)
	return c, nil
}

// changedFields returns the JSON names of the fields that differ.
func changedFields(a, b config.Config) []string {
	var ma, mb map[string]json.RawMessage
	da, _ := json.Marshal(a)
	db, _ := json.Marshal(b)
	_ = json.Unmarshal(da, &ma)
	_ = json.Unmarshal(db, &mb)
	var out []string
	for _, name := range config.FieldNames() {
		if string(ma[name]) != string(mb[name]) {
			out = append(out, name)
		}
	}
	return out
}

func onlyRunTimes(fields []string) bool {
	for _, f := range fields {
		if f != "last_run_at" && f != "last_retention_run_at" {
			return false
		}
	}
	return true
}

// orLocal returns a side_store value, "local" for "".
func orLocal(s string) string {
	if s == "" {
		return config.SideStoreLocal
	}
	return s
}
