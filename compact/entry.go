package compact

import (
	"fmt"
	"slices"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/entry"
)

// pinnedHeading starts the section of a summary that carries pinned
// entries verbatim. A later compaction carries the section forward.
const pinnedHeading = "\n\n## Pinned\n\nThese entries are marked `_extractable: false`: they are kept verbatim, never summarized.\n"

// entryJSON is the compaction entry compact writes, with its record
// under details.brainsurgeon.
type entryJSON = entry.Compaction[ours]

// marshalEntry encodes e as one line (entry.Marshal).
func marshalEntry(e *entryJSON) ([]byte, error) {
	b, err := entry.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode compaction entry: %w", err)
	}
	return b, nil
}

// fileLists returns pi's cumulative file lists: the previous compaction's
// plus the paths of the read, write and edit tool calls of the summarized
// messages; a file both read and modified is listed as modified only.
func fileLists(p *prior, span []msg) (read, modified []string) {
	rs, ms := map[string]bool{}, map[string]bool{}
	if p != nil {
		for _, f := range p.readFiles {
			rs[f] = true
		}
		for _, f := range p.modFiles {
			ms[f] = true
		}
	}
	for i := range span {
		for _, tc := range span[i].calls {
			if tc.path == "" {
				continue
			}
			switch strings.ToLower(tc.name) {
			case "read", "read_file", "view":
				rs[tc.path] = true
			case "write", "edit", "multiedit", "write_file", "edit_file":
				ms[tc.path] = true
			}
		}
	}
	read, modified = []string{}, []string{}
	for f := range rs {
		if !ms[f] {
			read = append(read, f)
		}
	}
	for f := range ms {
		modified = append(modified, f)
	}
	slices.Sort(read)
	slices.Sort(modified)
	return read, modified
}

// withPinned returns summary with the pinned section: the one the
// previous summary carried, then the raw lines of the pinned messages of
// the summarized span. A pinned section the summarizer copied is dropped
// first, so the section appears once.
func withPinned(summary string, p *prior, span []msg) (string, []string) {
	if i := strings.Index(summary, pinnedHeading); i >= 0 {
		summary = summary[:i]
	}
	var carried string
	if p != nil {
		if i := strings.Index(p.summary, pinnedHeading); i >= 0 {
			carried = p.summary[i+len(pinnedHeading):]
		}
	}
	var ids []string
	var b strings.Builder
	for i := range span {
		if !span[i].pinned {
			continue
		}
		ids = append(ids, span[i].id)
		fmt.Fprintf(&b, "\n<pinned id=%q>\n%s\n</pinned>\n", span[i].id, span[i].raw)
	}
	if carried == "" && b.Len() == 0 {
		return summary, ids
	}
	return strings.TrimRight(summary, "\n") + pinnedHeading + carried + b.String(), ids
}
