package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// sourceRestoreOutput is the JSON output of a restore of a tool result
// stored at the source: the value, and what became of its placeholder.
type sourceRestoreOutput struct {
	*restore.SourceValue
	Text      string                   `json:"text"`
	WriteBack *restore.SourceWriteBack `json:"write_back"`
}

// source restores a tool result stored at the source (key "tc-<id>"): it
// prints the result's text at once and writes the stored content back in
// place of the placeholder, now when the session is idle, else queued.
func (c *restoreCommand) source(ctx context.Context, r *restore.Restorer, ref bs.SessionRef, key string, asJSON bool) error {
	sv, err := r.Source(ctx, ref, key)
	if err != nil {
		return err
	}
	wb, err := r.WriteBackSources(ctx, ref, []string{key})
	if err == nil && len(wb.Refused) > 0 && !strings.HasPrefix(wb.Refused[0].Reason, "no placeholder") {
		err = fmt.Errorf("%s: the placeholder stays in the transcript: %s", key, wb.Refused[0].Reason)
	}
	text := strings.Join(sv.Texts, "")
	if asJSON {
		return cli.WriteJSON(c.m.Stdout, sourceRestoreOutput{SourceValue: sv, Text: text, WriteBack: wb}, err)
	}
	io.WriteString(c.m.Stdout, text)
	if !strings.HasSuffix(text, "\n") && isTerminal(c.m.Stdout) {
		io.WriteString(c.m.Stdout, "\n")
	}
	status := fmt.Sprintf("restored %s (%d bytes of content", key, sv.Bytes)
	if sv.OtherBlocks > 0 {
		status += fmt.Sprintf(", %d non-text blocks not shown", sv.OtherBlocks)
	}
	status += ")"
	switch {
	case wb == nil:
	case len(wb.Written) > 0:
		status += "; written back into the transcript now"
	case len(wb.Queued) > 0:
		status += "; queued: written back when the session is idle (" + wb.Busy + ")"
	case len(wb.Refused) > 0:
		status += "; " + wb.Refused[0].Reason
	}
	fmt.Fprintln(c.m.Stderr, status)
	return err
}
