package agenttext

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// ViewRestoreNote says what a restore of a value the context engine
// serves from the host's transcript did: the value comes back exactly as
// stored and nothing was written to the transcript. A value the view had
// collapsed shows in full from the next turn, except in read-only mode,
// where the restore is not recorded and the view keeps it collapsed.
func ViewRestoreNote(entryID string, collapsed, readOnly bool) string {
	switch {
	case collapsed && readOnly:
		return fmt.Sprintf("Restored entry %s from the transcript; it is returned here only. The server is in read-only mode: nothing was recorded, so the model's view keeps it collapsed in later turns; restore it again when you need it.", entryID)
	case collapsed:
		return fmt.Sprintf("Restored entry %s from the transcript: the model's view shows it in full from the next turn; the transcript was not changed.", entryID)
	}
	return fmt.Sprintf("Entry %s as the transcript stores it; it was not collapsed in the model's view and nothing was changed.", entryID)
}

// SummaryDescription writes recall_describe's text for one summary of the
// context engine.
func SummaryDescription(w io.Writer, r engine.SummaryRecord) {
	field(w, "Summary", "%s", r.ID)
	field(w, "Level", "%d (%s)", r.Level, r.Layer)
	if !r.CreatedAt.IsZero() {
		field(w, "Made", "%s", Stamp(r.CreatedAt))
	}
	if len(r.Children) > 0 {
		field(w, "Condenses", "%s", strings.Join(r.Children, ", "))
	}
	if len(r.Entries) > 0 {
		field(w, "Stands for", "%s, %s … %s", plural.Count(len(r.Entries), "message", "messages"), r.Entries[0], r.Entries[len(r.Entries)-1])
	} else if len(r.Children) == 0 {
		field(w, "Stands for", "no messages")
	}
	if r.Parent != "" {
		field(w, "Condensed into", "%s", r.Parent)
	}
	if len(r.Pinned) > 0 {
		field(w, "Pinned", "%s (carried verbatim)", strings.Join(r.Pinned, ", "))
	}
	field(w, "Tokens", "%s (%s before)", Num(r.Tokens), Num(r.TokensBefore))
	if r.Degraded {
		reason := r.Reason
		if reason == "" {
			reason = "summary made without a model"
		}
		field(w, "Degraded", "yes (%s)", reason)
	}
	fmt.Fprintf(w, "Expand: recall_expand {\"id\":%q} returns the original messages\n", r.ID)
	fmt.Fprintf(w, "\nSummary:\n%s\n", r.Text)
}

// SummaryExpansionHeader is the line recall_expand of a summary starts
// with: how many original messages it stands for, and whether the output
// stops at max.
func SummaryExpansionHeader(id string, total, shown, max int) string {
	s := fmt.Sprintf("summary %s stands for %s (as the transcript stores them)", id, plural.Count(total, "message", "messages"))
	if shown < total {
		s += fmt.Sprintf("; showing the first %d (max %d)", shown, max)
	}
	return s
}

// SummaryExpansionBody writes the raw lines of the messages a summary
// stands for, one a line.
func SummaryExpansionBody(w io.Writer, lines [][]byte) {
	for _, l := range lines {
		w.Write(bytes.TrimRight(l, "\n"))
		fmt.Fprintln(w)
	}
}
