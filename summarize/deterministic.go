package summarize

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/compact"
)

// Default bounds of a deterministic summary.
const (
	// DefaultMaxBytes is the largest deterministic summary.
	DefaultMaxBytes = 8 << 10
	// DefaultMinBytes is the size a deterministic summary may always use,
	// however small its input.
	DefaultMinBytes = 1 << 10
	// DefaultRatio is the share of its input a deterministic summary may
	// use above DefaultMinBytes.
	DefaultRatio = 0.10
)

// Deterministic is the extractive summarizer that works offline and
// always succeeds. It renders [ExtractFacts] in pi's summary skeleton and
// marks the result degraded. The zero value uses the defaults; the
// summary is at most min(MaxBytes, max(MinBytes, Ratio × input bytes)).
type Deterministic struct {
	// MaxBytes caps the summary (DefaultMaxBytes when 0).
	MaxBytes int
	// MinBytes is the size allowed whatever the input (DefaultMinBytes
	// when 0).
	MinBytes int
	// Ratio is the share of the input allowed (DefaultRatio when 0).
	Ratio float64
}

// Name returns "deterministic".
func (d *Deterministic) Name() string { return "deterministic" }

// Limit returns the largest summary d writes for inputBytes bytes of
// input.
func (d *Deterministic) Limit(inputBytes int) int {
	maxB, minB, ratio := DefaultMaxBytes, DefaultMinBytes, DefaultRatio
	if d != nil {
		if d.MaxBytes > 0 {
			maxB = d.MaxBytes
		}
		if d.MinBytes > 0 {
			minB = d.MinBytes
		}
		if d.Ratio > 0 {
			ratio = d.Ratio
		}
	}
	return min(maxB, max(minB, int(ratio*float64(inputBytes))))
}

// Summarize returns the extractive summary of messages (raw transcript
// lines); it is always degraded (made without a model), and its Method is
// Name's. Items that mention a word of focus are kept first when space
// runs short. It fails only when ctx is done.
func (d *Deterministic) Summarize(ctx context.Context, messages [][]byte, focus string) (compact.Summary, error) {
	if err := ctx.Err(); err != nil {
		return compact.Summary{Degraded: true, Method: d.Name()}, fmt.Errorf("deterministic summary: %w", err)
	}
	x := extract(messages)
	return compact.Summary{Text: renderFacts(x, focus, d.Limit(x.inputBytes)), Degraded: true, Method: d.Name()}, nil
}

// SummarizeSeq is Summarize over lines read one at a time: the summary
// is the one Summarize writes of the same lines in the same order, and no
// line is kept once it is read, so a long input never needs to be held
// whole. It fails with the first error lines yields (the summary is then
// the empty one), or when ctx is done.
func (d *Deterministic) SummarizeSeq(ctx context.Context, lines iter.Seq2[[]byte, error], focus string) (compact.Summary, error) {
	if err := ctx.Err(); err != nil {
		return compact.Summary{Degraded: true, Method: d.Name()}, fmt.Errorf("deterministic summary: %w", err)
	}
	x := newExtraction()
	for raw, err := range lines {
		if err != nil {
			return compact.Summary{Degraded: true, Method: d.Name()}, fmt.Errorf("deterministic summary: read its input: %w", err)
		}
		x.line(raw)
	}
	x.finish()
	return compact.Summary{Text: renderFacts(x, focus, d.Limit(x.inputBytes)), Degraded: true, Method: d.Name()}, nil
}

// renderFacts renders x within limit bytes, showing fewer and shorter
// items until it fits.
func renderFacts(x *extraction, focus string, limit int) string {
	terms := focusTerms(focus)
	var s string
	for _, b := range []struct{ items, chars int }{{12, 240}, {8, 200}, {5, 160}, {3, 120}, {2, 100}, {1, 80}} {
		s = renderBudget(x, focus, terms, b.items, b.chars)
		if len(s) <= limit {
			return s
		}
	}
	return cutAtLine(s, limit)
}

// cutAtLine cuts s to at most limit bytes at a line break, with a marker.
func cutAtLine(s string, limit int) string {
	const marker = "\n[… summary cut to its size limit]"
	if limit <= len(marker) {
		return strings.ToValidUTF8(s[:max(limit, 0)], "")
	}
	cut := s[:limit-len(marker)]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return strings.ToValidUTF8(cut, "") + marker
}

func renderBudget(x *extraction, focus string, terms []string, n, chars int) string {
	f := &x.facts
	var b strings.Builder
	fmt.Fprintf(&b, "_Extractive summary written without a model (degraded): %s, %s", plural(f.Messages, "message"), plural(f.ToolCalls, "tool call"))
	if f.FirstEntryID != "" {
		fmt.Fprintf(&b, ", entries %s to %s", f.FirstEntryID, f.LastEntryID)
	}
	b.WriteString("._\n\n")

	b.WriteString("## Goal\n")
	goals := 0
	if x.firstUser.Text != "" {
		fmt.Fprintf(&b, "- %s\n", clip(x.firstUser.Text, chars))
		goals++
	}
	if x.lastUser.Text != "" && x.lastUser.Text != x.firstUser.Text {
		fmt.Fprintf(&b, "- Latest request: %s\n", clip(x.lastUser.Text, chars))
		goals++
	}
	if goals == 0 {
		b.WriteString("- (no user request in this stretch)\n")
	}

	b.WriteString("\n## Constraints & Preferences\n")
	writeNotes(&b, pick(f.Constraints, n, terms), chars, "- (none recorded)")

	b.WriteString("\n## Progress\n### Done\n")
	mod := x.recentFiles(n, terms, true)
	for _, fi := range mod {
		fmt.Fprintf(&b, "- [x] Modified %s (%s)\n", fi.path, opCounts(fi))
	}
	if more := len(f.FilesModified) - len(mod); more > 0 && len(mod) > 0 {
		fmt.Fprintf(&b, "- [x] … and %d more modified files\n", more)
	}
	cmds := pickCommands(f.Commands, n, terms)
	for _, c := range cmds {
		mark, note := "x", ""
		if c.Failed {
			mark, note = " ", " (failed)"
		}
		fmt.Fprintf(&b, "- [%s] Ran `%s`%s\n", mark, clip(c.Command, chars), note)
	}
	if more := len(f.Commands) - len(cmds); more > 0 && len(cmds) > 0 {
		word := "commands"
		if more == 1 {
			word = "command"
		}
		fmt.Fprintf(&b, "- [x] … and %d more %s\n", more, word)
	}
	if len(mod) == 0 && len(cmds) == 0 {
		b.WriteString("- (no file changes or commands recorded)\n")
	}
	b.WriteString("\n### In Progress\n")
	if x.lastUser.Text != "" && !x.answered {
		fmt.Fprintf(&b, "- [ ] %s\n", clip(x.lastUser.Text, chars))
	} else {
		b.WriteString("- (nothing recorded as under way)\n")
	}
	b.WriteString("\n### Blocked\n")
	writeNotes(&b, pick(f.Errors, n, terms), chars, "- (no errors recorded)")

	b.WriteString("\n## Key Decisions\n")
	writeNotes(&b, pick(f.Decisions, n, terms), chars, "- (none recorded)")

	b.WriteString("\n## Next Steps\n")
	steps := pick(f.NextSteps, n, terms)
	if len(steps) == 0 {
		b.WriteString("1. (none recorded)\n")
	}
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, clip(s.Text, chars))
	}

	b.WriteString("\n## Critical Context\n")
	if f := strings.TrimSpace(focus); f != "" {
		fmt.Fprintf(&b, "- Requested focus: %s\n", clip(f, chars))
	}
	if read := x.recentFiles(n*2, terms, false); len(read) > 0 {
		names := make([]string, len(read))
		for i, fi := range read {
			names[i] = fi.path
		}
		fmt.Fprintf(&b, "- Files read: %s", strings.Join(names, ", "))
		if more := len(f.FilesRead) - len(read); more > 0 {
			fmt.Fprintf(&b, " (and %d more)", more)
		}
		b.WriteString("\n")
	}
	writeNotes(&b, pick(f.Findings, n, terms), chars, "")
	if len(f.ToolOperations) > 0 {
		ops := f.ToolOperations[:min(len(f.ToolOperations), n)]
		parts := make([]string, len(ops))
		for i, o := range ops {
			parts[i] = fmt.Sprintf("%s ×%d", o.Tool, o.Calls)
			if o.Errors > 0 {
				parts[i] += fmt.Sprintf(" (%d failed)", o.Errors)
			}
		}
		fmt.Fprintf(&b, "- Tools used: %s\n", strings.Join(parts, ", "))
	}
	if f.PreviousSummary != "" {
		fmt.Fprintf(&b, "- Earlier summary (excerpt): %s\n", clip(f.PreviousSummary, chars*2))
	}
	return b.String()
}

// recentFiles returns up to n files, modified or only read, the ones that
// match the focus first, then the most recently touched; in path order.
func (x *extraction) recentFiles(n int, terms []string, modified bool) []*fileInfo {
	var fs []*fileInfo
	for _, fi := range x.files {
		if (fi.writes+fi.edit > 0) == modified {
			fs = append(fs, fi)
		}
	}
	// Files known only from a previous summary's details.
	known := x.facts.FilesRead
	if modified {
		known = x.facts.FilesModified
	}
	for _, p := range known {
		if _, ok := x.files[p]; !ok {
			fs = append(fs, &fileInfo{path: p})
		}
	}
	slices.SortFunc(fs, func(a, b *fileInfo) int {
		am, bm := matches(a.path, terms), matches(b.path, terms)
		if am != bm {
			if am {
				return -1
			}
			return 1
		}
		if a.last != b.last {
			return b.last - a.last
		}
		return strings.Compare(a.path, b.path)
	})
	fs = fs[:min(len(fs), n)]
	slices.SortFunc(fs, func(a, b *fileInfo) int { return strings.Compare(a.path, b.path) })
	return fs
}

func opCounts(fi *fileInfo) string {
	var p []string
	if fi.writes > 0 {
		p = append(p, plural(fi.writes, "write"))
	}
	if fi.edit > 0 {
		p = append(p, plural(fi.edit, "edit"))
	}
	if fi.reads > 0 {
		p = append(p, plural(fi.reads, "read"))
	}
	if len(p) == 0 {
		return "before this stretch"
	}
	return strings.Join(p, ", ")
}

func plural(n int, w string) string {
	if n == 1 {
		return "1 " + w
	}
	return fmt.Sprintf("%d %ss", n, w)
}

func writeNotes(b *strings.Builder, notes []Note, chars int, none string) {
	if len(notes) == 0 && none != "" {
		b.WriteString(none)
		b.WriteString("\n")
	}
	for _, n := range notes {
		b.WriteString("- ")
		b.WriteString(clip(n.Text, chars))
		b.WriteString("\n")
	}
}

// pick returns up to n notes: those matching the focus first, then the
// latest; in their original order.
func pick(l []Note, n int, terms []string) []Note {
	idx := pickIndexes(len(l), n, func(i int) bool { return matches(l[i].Text, terms) })
	out := make([]Note, len(idx))
	for i, j := range idx {
		out[i] = l[j]
	}
	return out
}

func pickCommands(l []Command, n int, terms []string) []Command {
	idx := pickIndexes(len(l), n, func(i int) bool { return matches(l[i].Command, terms) })
	out := make([]Command, len(idx))
	for i, j := range idx {
		out[i] = l[j]
	}
	return out
}

// pickIndexes chooses up to n of count items, matching ones first (latest
// first), then the latest others, and returns their indexes ascending.
func pickIndexes(count, n int, match func(int) bool) []int {
	if count <= n {
		idx := make([]int, count)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	var idx []int
	taken := map[int]bool{}
	for i := count - 1; i >= 0 && len(idx) < n; i-- {
		if match(i) {
			idx, taken[i] = append(idx, i), true
		}
	}
	for i := count - 1; i >= 0 && len(idx) < n; i-- {
		if !taken[i] {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	return idx
}

// focusTerms returns the lower-case words of focus of 3 bytes or more.
func focusTerms(focus string) []string {
	var out []string
	for _, w := range strings.Fields(strings.ToLower(focus)) {
		w = strings.Trim(w, ".,;:!?\"'()[]")
		if len(w) >= 3 {
			out = append(out, w)
		}
	}
	return out
}

func matches(s string, terms []string) bool {
	if len(terms) == 0 {
		return false
	}
	l := strings.ToLower(s)
	for _, t := range terms {
		if strings.Contains(l, t) {
			return true
		}
	}
	return false
}

// clip is oneLine for rendering.
func clip(s string, chars int) string { return oneLine(s, chars) }
