package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// cleanupOutput is what uninstall did with the tool results the plugin
// offloaded: written back into their transcripts now, queued for busy
// sessions, or kept as placeholders.
type cleanupOutput struct {
	// KeepPlaceholders says --keep-placeholders left them all.
	KeepPlaceholders bool `json:"keep_placeholders"`
	// AppliedFromQueue counts the write-backs queued earlier (by an
	// earlier uninstall or restore) applied now.
	AppliedFromQueue int `json:"applied_from_queue"`
	// WrittenBack, Queued and Kept count the placeholders of all
	// sessions; Sessions has them per session (only sessions that hold
	// any).
	WrittenBack int              `json:"written_back"`
	Queued      int              `json:"queued"`
	Kept        int              `json:"kept"`
	Sessions    []sessionCleanup `json:"sessions"`
	// Errors are the sessions that could not be read or written.
	Errors []sessionError `json:"errors,omitempty"`
	// DaemonURL and DaemonRunning say whether a daemon that applies the
	// queue answered at the plugin's daemonUrl.
	DaemonURL     string `json:"daemon_url"`
	DaemonRunning bool   `json:"daemon_running"`
}

// sessionCleanup is one session's part of cleanupOutput.
type sessionCleanup struct {
	Session     string                  `json:"session"`
	WrittenBack []string                `json:"written_back"`
	Queued      []string                `json:"queued"`
	Busy        string                  `json:"busy,omitempty"`
	Kept        []restore.SourceRefusal `json:"kept"`
}

// uninstallOutput is the JSON output of openclaw uninstall.
type uninstallOutput struct {
	*openclawinstall.UninstallResult
	Cleanup *cleanupOutput        `json:"cleanup,omitempty"`
	Next    *openclawinstall.Next `json:"next,omitempty"`
}

// cleanupSources writes the tool results stored at the source back into every
// session's transcript (applied now when idle, else queued) after applying
// the write-backs queued before; with keep it only counts the
// placeholders. It returns nil when the agents dir does not exist (no
// session can hold one).
func cleanupSources(ctx context.Context, m *Main, agentsDir, daemonURL string, keep bool) (*cleanupOutput, error) {
	if fi, err := os.Stat(agentsDir); err != nil || !fi.IsDir() {
		return nil, nil
	}
	out := &cleanupOutput{KeepPlaceholders: keep, Sessions: []sessionCleanup{}, DaemonURL: daemonURL}
	state, _, _ := openclawinstall.ProbeDaemon(ctx, openclawinstall.Env{}, daemonURL)
	out.DaemonRunning = state == openclawinstall.DaemonRunning
	r, set, err := m.restorer(ctx, agentsDir)
	if err != nil {
		return out, err
	}
	if !keep {
		n, _, err := r.ApplyPending(ctx)
		out.AppliedFromQueue = n
		if err != nil {
			out.Errors = append(out.Errors, sessionError{Session: "(queue)", Error: err.Error()})
		}
	}
	refs, err := bs.ListSessions(ctx, set.Store, m.logger())
	if err != nil {
		return out, err
	}
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		sc := sessionCleanup{Session: ref.String(), WrittenBack: []string{}, Queued: []string{}, Kept: []restore.SourceRefusal{}}
		if keep {
			keys, ids, err := r.SourcePlaceholders(ctx, ref)
			if err != nil {
				out.Errors = append(out.Errors, sessionError{Session: ref.String(), Error: err.Error()})
				continue
			}
			for i, k := range keys {
				sc.Kept = append(sc.Kept, restore.SourceRefusal{Key: k, EntryID: ids[i], Reason: "--keep-placeholders"})
			}
		} else {
			res, err := r.WriteBackSources(ctx, ref, nil)
			if err != nil {
				out.Errors = append(out.Errors, sessionError{Session: ref.String(), Error: err.Error()})
				continue
			}
			sc.WrittenBack, sc.Queued, sc.Busy, sc.Kept = res.Written, res.Queued, res.Busy, res.Refused
		}
		if len(sc.WrittenBack)+len(sc.Queued)+len(sc.Kept) == 0 {
			continue
		}
		out.WrittenBack += len(sc.WrittenBack)
		out.Queued += len(sc.Queued)
		out.Kept += len(sc.Kept)
		out.Sessions = append(out.Sessions, sc)
	}
	return out, nil
}

// printCleanup says what uninstall did with the offloaded tool results and
// what is still pending, and who applies it.
func printCleanup(w io.Writer, co *cleanupOutput) {
	if co == nil {
		return
	}
	if co.AppliedFromQueue > 0 {
		fmt.Fprintf(w, "Applied %s queued earlier.\n", plural.Count(co.AppliedFromQueue, "write-back", "write-backs"))
	}
	switch {
	case co.KeepPlaceholders && co.Kept > 0:
		fmt.Fprintf(w, "Kept %s of offloaded tool results (--keep-placeholders) in %s; each names its value: brainsurgeon restore <session> tc-<id> prints it and writes it back.\n", plural.Count(co.Kept, "placeholder", "placeholders"), plural.Count(len(co.Sessions), "session", "sessions"))
	case co.WrittenBack+co.Queued+co.Kept == 0:
		fmt.Fprintln(w, "Offloaded tool results: none left in the transcripts.")
	}
	for _, s := range co.Sessions {
		if co.KeepPlaceholders {
			continue
		}
		var parts []string
		if n := len(s.WrittenBack); n > 0 {
			parts = append(parts, fmt.Sprintf("%d written back now", n))
		}
		if n := len(s.Queued); n > 0 {
			parts = append(parts, fmt.Sprintf("%d queued (the session is busy: %s)", n, s.Busy))
		}
		if n := len(s.Kept); n > 0 {
			parts = append(parts, fmt.Sprintf("%d kept", n))
		}
		fmt.Fprintf(w, "Offloaded tool results of %s: %s.\n", s.Session, strings.Join(parts, ", "))
		for _, k := range s.Kept {
			fmt.Fprintf(w, "  kept %s (entry %s): %s\n", k.Key, k.EntryID, k.Reason)
		}
	}
	if !co.KeepPlaceholders && co.Queued > 0 {
		if co.DaemonRunning {
			fmt.Fprintf(w, "Pending: %s in the queue until %s idle (idle_seconds after the last turn, 300 s by default). The daemon at %s applies them on its schedule (auto_cron, every 2 minutes by default): leave it running until then. Or run brainsurgeon openclaw uninstall again later: it applies them too.\n", plural.Count(co.Queued, "write-back", "write-backs"), plural.Noun(co.Queued, "its session is", "their sessions are"), co.DaemonURL)
		} else {
			fmt.Fprintf(w, "Pending: %s in the queue until %s idle (idle_seconds after the last turn, 300 s by default). No daemon runs at %s to apply them: run brainsurgeon openclaw uninstall again once the sessions are idle (or start brainsurgeon serve, which applies them).\n", plural.Count(co.Queued, "write-back", "write-backs"), plural.Noun(co.Queued, "its session is", "their sessions are"), co.DaemonURL)
		}
	}
	for _, e := range co.Errors {
		fmt.Fprintf(w, "  error %s: %s\n", e.Session, e.Error)
	}
}

// openclawStatus is the end-to-end status doctor reports.
type openclawStatus = openclawinstall.StatusResult

// checkOpenClaw runs the end-to-end checks of openclaw status for doctor
// when the plugin is installed under agentsDir's root or OpenClaw's config
// names it; nil otherwise.
func checkOpenClaw(ctx context.Context, agentsDir, agentsDirArg string) *openclawStatus {
	st, err := openclawinstall.Status(openclawinstall.Env{}, agentsDir)
	if err != nil || !(st.Installed || st.ConfigHasEntry || st.ConfigNamesPlugin) {
		return nil
	}
	openclawinstall.CheckSystem(ctx, openclawinstall.Env{}, st, agentsDirArg)
	return st
}

// uninstallNext says what must be restarted after uninstall: the gateway,
// to drop the plugin; never the daemon for the key.
func uninstallNext(res *openclawinstall.UninstallResult) *openclawinstall.Next {
	n := &openclawinstall.Next{Restart: []string{}, Commands: []string{}}
	if res.ConfigAction != "untouched" && res.ConfigAction != "" {
		n.Restart = append(n.Restart, "gateway")
		n.Commands = append(n.Commands, "openclaw gateway restart")
		n.Notes = append(n.Notes, "Restart OpenClaw's gateway so that it drops the plugin (a gateway that hot-reloads its config drops it by itself); until then it still offloads results through the plugin.")
	}
	n.Notes = append(n.Notes, "The daemon needs no restart. Stop it when you no longer want it (brainsurgeon service uninstall, or stop brainsurgeon serve), after the queued write-backs are applied.")
	return n
}

func printNext(w io.Writer, n *openclawinstall.Next) {
	if n == nil {
		return
	}
	for _, note := range n.Notes {
		fmt.Fprintln(w, note)
	}
	if len(n.Commands) > 0 {
		fmt.Fprintln(w, "\nNext, run:")
		for _, c := range n.Commands {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
}
