package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// snapshot is what a scan of a transcript kept: the parsed lines of
// interest (with their own copy of the raw bytes) and the version read.
type snapshot struct {
	path    string
	version bs.Version
	// lines are the kept entry lines in file order.
	lines []*bs.Entry
	// byID maps an entry id to the index in lines of the last line
	// carrying it.
	byID map[string]int
}

// entry returns the last kept line whose entry id is id.
func (s *snapshot) entry(id string) (*bs.Entry, bool) {
	i, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	return s.lines[i], true
}

// scanFilter decides which lines a scan keeps. ids are entry ids whose
// lines (and the lines of calls naming them) are wanted; callIDs are tool
// call ids whose calls and results are wanted. all keeps every entry line.
type scanFilter struct {
	ids     map[string]bool
	callIDs map[string]bool
	all     bool
}

// manyIDs is the number of wanted ids above which a scan parses every line
// instead of searching each line for each id.
const manyIDs = 16

var (
	restoreWord  = []byte("restore")
	toolCallIDKw = []byte(`"toolCallId"`)
)

// scan reads the transcript at path and keeps the entry lines f wants.
// A missing transcript is an error wrapping ErrNotFound that names the
// sessions next to it.
func scan(ctx context.Context, ref bs.SessionRef, f scanFilter) (*snapshot, error) {
	file, err := os.Open(ref.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, missingSession(ref)
		}
		return nil, fmt.Errorf("session %s: %w", refName(ref), err)
	}
	defer file.Close()
	v, err := hostfile.FingerprintFile(file)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", refName(ref), err)
	}
	s := &snapshot{path: ref.Path, version: v, byID: map[string]int{}}
	if f.callIDs == nil {
		f.callIDs = map[string]bool{}
	}
	quoted := map[string][]byte{}
	for id := range f.ids {
		quoted[id] = []byte(id)
	}
	rd := session.NewReader(io.NewSectionReader(file, 0, v.Size))
	for rd.Next() {
		if rd.Line()%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		raw := rd.Raw()
		if !f.all && !wanted(raw, f, quoted, rd) {
			continue
		}
		e := session.ParseEntry(bytes.Clone(raw), rd.Line(), rd.Offset())
		if e.Kind != bs.KindEntry {
			continue
		}
		if !f.all && !f.ids[e.ID] && !isCallOrResult(e) {
			continue
		}
		if e.ID != "" {
			s.byID[e.ID] = len(s.lines)
		}
		s.lines = append(s.lines, e)
		// Calls naming a wanted entry make their results wanted.
		if e.Role == "assistant" || e.Type == "tool_call" {
			for _, c := range toolCalls(e) {
				if c.id != "" && (f.callIDs[c.id] || f.ids[restoreTarget(c)]) {
					f.callIDs[c.id] = true
				}
			}
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("session %s: read: %w", refName(ref), err)
	}
	return s, nil
}

// wanted is the cheap byte-level prefilter of scan.
func wanted(raw []byte, f scanFilter, quoted map[string][]byte, rd *session.Reader) bool {
	if len(f.ids) > manyIDs {
		e := rd.Entry()
		if f.ids[e.ID] {
			return true
		}
		if e.Role == "assistant" && bytes.Contains(raw, restoreWord) {
			return true
		}
	} else {
		for _, q := range quoted {
			if bytes.Contains(raw, q) {
				return true
			}
		}
	}
	if len(f.callIDs) > 0 && (bytes.Contains(raw, toolCallIDKw) || bytes.Contains(raw, []byte(`"toolCall"`))) {
		for id := range f.callIDs {
			if bytes.Contains(raw, []byte(id)) {
				return true
			}
		}
	}
	return false
}

func isCallOrResult(e *bs.Entry) bool {
	return e.Role == "assistant" || e.Role == "toolResult" || e.Type == "tool_call"
}

// missingSession describes a transcript that does not exist and lists the
// sessions beside it.
func missingSession(ref bs.SessionRef) error {
	dir := filepath.Dir(ref.Path)
	names, _ := os.ReadDir(dir)
	var ids []string
	for _, n := range names {
		if session.ClassifyFile(n.Name()) == session.FileKindTranscript {
			ids = append(ids, strings.TrimSuffix(n.Name(), ".jsonl"))
		}
	}
	sort.Strings(ids)
	have := "no sessions there"
	if len(ids) > 0 {
		if len(ids) > 8 {
			ids = append(ids[:8], fmt.Sprintf("… (%d in all)", len(ids)))
		}
		have = "sessions there: " + strings.Join(ids, ", ")
	}
	return fmt.Errorf("session %s: transcript %s does not exist (%s): %w", refName(ref), ref.Path, have, bs.ErrNotFound)
}

// missingEntry describes an entry id that the transcript does not hold.
func missingEntry(ctx context.Context, ref bs.SessionRef, id string) error {
	n, sample := 0, []string{}
	if s, err := scan(ctx, ref, scanFilter{all: true}); err == nil {
		for _, e := range s.lines {
			if e.ID == "" {
				continue
			}
			n++
			if len(sample) < 3 {
				sample = append(sample, e.ID)
			}
		}
	}
	like := ""
	if len(sample) > 0 {
		like = "; ids look like " + strings.Join(sample, ", ")
	}
	return fmt.Errorf("entry %q not found in session %s (%d entries%s; get_context lists the extracted ones): %w",
		id, refName(ref), n, like, bs.ErrNotFound)
}

func refName(ref bs.SessionRef) string {
	if ref.ID == "" {
		return ref.Path
	}
	return ref.String()
}

// withID fills in the session id from the transcript's file name, as
// session.Open does.
func withID(ref bs.SessionRef) bs.SessionRef {
	if ref.ID == "" && ref.Path != "" {
		ref.ID = strings.TrimSuffix(filepath.Base(ref.Path), ".jsonl")
	}
	return ref
}
