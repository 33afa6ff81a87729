package session

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brainsurgeon/brainsurgeon"
)

// Layout is the directory layout of a JSONL session store.
type Layout int

// The layouts Discover recognises. The zero Layout is unknown.
const (
	// LayoutOpenClaw is an OpenClaw agents dir:
	// <agentsDir>/<agent>/sessions/<sessionId>.jsonl next to the agent's
	// sessions.json store.
	LayoutOpenClaw Layout = iota + 1
	// LayoutPi is a pi sessions dir (~/.pi/agent/sessions):
	// <root>/--<cwd with / replaced by ->--/<timestamp>_<uuid>.jsonl.
	LayoutPi
)

// String returns "openclaw", "pi" or "unknown".
func (l Layout) String() string {
	switch l {
	case LayoutOpenClaw:
		return "openclaw"
	case LayoutPi:
		return "pi"
	}
	return "unknown"
}

// detect tells the layout of dir, descending into an "agents" subdirectory
// once. It returns the directory to scan and its entries.
func (s *scanner) detect(dir, shown string) (Layout, string, []fs.DirEntry, error) {
	s.dep(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, "", nil, fmt.Errorf("read agents dir %s: %w", shown, err)
	}
	var agentLike, piLike, hasAgents bool
	var visible []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			s.noCache = true
		}
		dirEntry := isDir(filepath.Join(dir, name), e)
		if dirEntry {
			s.dep(filepath.Join(dir, name)) // the layout depends on its sessions/ or agent/
		}
		if dirEntry {
			visible = append(visible, name+"/")
		} else {
			visible = append(visible, name)
		}
		switch {
		case !dirEntry:
		case isPiProjectDir(name):
			piLike = true
		case statDir(filepath.Join(dir, name, "sessions")) || statDir(filepath.Join(dir, name, "agent")):
			agentLike = true
		case name == "agents":
			hasAgents = true
		}
	}
	switch {
	case agentLike:
		return LayoutOpenClaw, dir, entries, nil
	case hasAgents:
		sub := filepath.Join(dir, "agents")
		s.dep(sub)
		subEntries, err := os.ReadDir(sub)
		if err != nil {
			return 0, "", nil, fmt.Errorf("read agents dir %s: %w", sub, err)
		}
		return LayoutOpenClaw, sub, subEntries, nil
	case piLike:
		return LayoutPi, dir, entries, nil
	case len(visible) == 0 || filepath.Base(dir) == "agents":
		return LayoutOpenClaw, dir, entries, nil
	}
	found := visible
	more := ""
	if len(found) > 8 {
		more = fmt.Sprintf(", … and %d more", len(found)-8)
		found = found[:8]
	}
	return 0, "", nil, errorf(brainsurgeon.ErrInvalid, "%s is not a session store: %s; found %s%s",
		shown, expectedLayouts, strings.Join(found, ", "), more)
}

// isPiProjectDir reports whether name is a pi project dir "--<cwd>--".
func isPiProjectDir(name string) bool {
	return len(name) >= 4 && strings.HasPrefix(name, "--") && strings.HasSuffix(name, "--")
}

// isDir reports whether the entry at path is a directory, following a
// symbolic link.
func isDir(path string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		return statDir(path)
	}
	return false
}

func statDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// isFile reports whether the entry at path is a regular file, following
// a symbolic link.
func isFile(path string, e fs.DirEntry) bool {
	if e.Type().IsRegular() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		fi, err := os.Stat(path)
		return err == nil && fi.Mode().IsRegular()
	}
	return false
}
