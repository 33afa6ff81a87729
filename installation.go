package brainsurgeon

// Installation is one host installation as the library reaches it: the
// store of its sessions, the side store of their extracted values, and
// where they live. The backends open it (backend.Open returns it with
// their own answers beside it); the daemon, the API and the commands take
// it as it is. The zero value holds no store; callers check Store and
// Side before use.
type Installation struct {
	// Store lists, reads and writes the sessions of every backend.
	Store Store
	// Side keeps the extracted values (the JSONL era's side directories,
	// for both backends).
	Side SideStore
	// AgentsDir is the agents dir (or pi sessions dir) that was opened;
	// the host config beside it names the models' windows.
	AgentsDir string
	// PiSessionsDir is the pi sessions dir served beside AgentsDir, or
	// "" when there is none.
	PiSessionsDir string
	// StateDir is BrainSurgeon's state dir, "<agents dir>/../.brainsurgeon":
	// config, queue, audit log, the context engine's state.
	StateDir string
	// Backends names the backends in use, in order ("jsonl", "sqlite"),
	// for messages and /api/health.
	Backends []string
}
