package extract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Extractor runs extraction passes over sessions. A pass reads a session
// once to decide, writes the side files of the values it moves out and
// makes them durable, then changes the transcript in one safe rewrite.
type Extractor struct {
	// Policy decides what is extracted.
	Policy Policy
	// Editor writes the transcript (a *session.Writer or a Store).
	Editor bs.Editor
	// Logger receives a debug record per decision and per extraction; nil
	// discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock
	// CompressAbove is passed to the SideWriter (default 4096 bytes).
	CompressAbove int
	// DryRun decides and reports without writing anything.
	DryRun bool
}

// IdleChecker is implemented by editors that can tell cheaply whether a
// session is idle (session.Store and *session.Writer do). The Extractor
// asks before it reads, so a busy session costs nothing.
type IdleChecker interface {
	CheckIdle(ref bs.SessionRef) error
}

// EntryResult describes the extraction of one entry.
type EntryResult struct {
	ID    string   `json:"entry_id"`
	Line  int      `json:"line"`
	Type  string   `json:"type"`
	Keys  []string `json:"keys"`
	Sizes []int    `json:"sizes_bytes"`
	// BytesSaved is what the entry's line shrank by.
	BytesSaved int64 `json:"bytes_saved"`
}

// Result reports one pass over one session.
type Result struct {
	Session string `json:"session"`
	// Entries and Values count what was (or, in a dry run or a pass that
	// saved too little, would have been) extracted.
	Entries int `json:"entries"`
	Values  int `json:"values"`
	// BytesBefore and BytesAfter measure the transcript; BytesSaved is
	// their difference (before any write, the planned difference).
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
	BytesSaved  int64 `json:"bytes_saved"`
	// SideBytes is what the side files written take on disk.
	SideBytes int64 `json:"side_bytes"`
	// Written is true when the transcript was rewritten.
	Written bool `json:"written"`
	// Skipped says why nothing was written, when so.
	Skipped string        `json:"skipped,omitempty"`
	Details []EntryResult `json:"details,omitempty"`
	Counts  map[Code]int  `json:"decisions"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// ReadTime, SideTime and WriteTime split Elapsed: deciding, writing
	// and syncing the side files, and rewriting the transcript.
	ReadTime  time.Duration `json:"read_ns"`
	SideTime  time.Duration `json:"side_ns"`
	WriteTime time.Duration `json:"write_ns"`
}

type planned struct {
	line    int
	offset  int64
	length  int
	id      string
	trigger bs.TriggerType
	cands   []bs.Candidate
	repl    [][]byte
	reason  string
	code    Code
	// window is the entry's keep window; agedByPosition is set when its
	// age must be estimated from its position.
	window         int
	agedByPosition bool
}

// Run makes one extraction pass over a session. It returns the result
// and, when the transcript could not be written, an error (wrapping
// brainsurgeon.ErrBusy or ErrChanged when the session was in use; side
// files written before such an error are harmless orphans that the next
// pass reuses).
func (x *Extractor) Run(ctx context.Context, ref bs.SessionRef) (*Result, error) {
	start := time.Now()
	log := bs.LoggerOrDiscard(x.Logger)
	now := bs.Now(x.Clock)
	name := ref.String()
	// A session in use is left alone before any work is done.
	if g, ok := x.Editor.(IdleChecker); ok && !x.DryRun {
		if err := g.CheckIdle(ref); err != nil {
			return &Result{Session: name, Skipped: err.Error(), Counts: map[Code]int{}}, err
		}
	}
	src, err := os.Open(ref.Path)
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", name, err)
	}
	defer src.Close()
	version, err := hostfile.FingerprintFile(src)
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", name, err)
	}
	res := &Result{Session: name, BytesBefore: version.Size, Counts: map[Code]int{}}

	// One read: the index (for message positions) and the decisions. The
	// keep window needs positions, which are known only at the end, so
	// decisions are made as if the entry were old and re-checked then.
	ix := session.NewIndexer(ref.Path)
	rd := session.NewReader(io.NewSectionReader(src, 0, version.Size))
	forceMark := []byte(`"_extractable"`)
	var plan []planned
	for rd.Next() {
		if rd.Line()%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		// A line shorter than the minimum value length holds no value long
		// enough, unless the entry forces its extraction: index it only.
		raw := rd.Raw()
		if len(raw) < x.Policy.MinValueLength+2 && !bytes.Contains(raw, forceMark) {
			ix.Add(rd.LiteEntry(), rd.Terminated())
			continue
		}
		e := rd.Entry()
		ix.Add(e, rd.Terminated())
		if e.Kind != bs.KindEntry {
			continue
		}
		d := Decide(e, -1, x.Policy, now)
		if !d.Extract {
			res.Counts[d.Code]++
			if d.Code != CodeNothing {
				log.Debug(d.Reason, "session", name)
			}
			continue
		}
		p := planned{line: e.Line, offset: e.Offset, length: len(e.Raw), id: e.ID, trigger: d.Type, cands: d.Candidates,
			reason: d.Reason, code: d.Code, window: x.Policy.KeepRecent, agedByPosition: e.Timestamp.IsZero() && x.Policy.AgeThreshold > 0}
		if ext := ParseExtractable(e.Extractable); ext.Set && !ext.Force && !ext.Never {
			p.window = ext.Window
		}
		for _, c := range d.Candidates {
			p.repl = append(p.repl, replacement(e.Raw, c, e.ID, x.Policy.PreviewChars))
		}
		plan = append(plan, p)
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("extract %s: %w", name, err)
	}
	tr := ix.Transcript(ref, version)
	res.ReadTime = time.Since(start)
	ref = tr.Ref() // with the session id taken from the file name if it had none
	positions := tr.MessagePositions()
	kept := plan[:0]
	for _, p := range plan {
		pos, ok := positions[p.line]
		switch {
		case ok && pos < p.window:
			res.Counts[CodeTooRecent]++
			log.Debug(fmt.Sprintf("Entry %s: %s → KEEP (message %d from the end, keep_recent %d)", p.id, p.trigger, pos, p.window), "session", name)
			continue
		case ok && p.agedByPosition && time.Duration(pos)*time.Minute < x.Policy.AgeThreshold:
			res.Counts[CodeTooYoung]++
			continue
		}
		res.Counts[p.code]++
		log.Debug(p.reason, "session", name)
		for i, c := range p.cands {
			res.BytesSaved += int64(c.Len() - len(p.repl[i]))
		}
		res.Values += len(p.cands)
		kept = append(kept, p)
	}
	plan = kept
	res.Entries = len(plan)
	res.BytesAfter = res.BytesBefore - res.BytesSaved
	finish := func(r *Result) *Result { r.Elapsed = time.Since(start); return r }
	if len(plan) == 0 {
		res.Skipped = "nothing to extract"
		return finish(res), nil
	}
	if tokens := res.BytesSaved / 4; tokens < int64(x.Policy.MinSavingTokens) {
		res.Skipped = fmt.Sprintf("saving %d tokens is below min_saving_tokens %d", tokens, x.Policy.MinSavingTokens)
		log.Debug("pass skipped", "session", name, "reason", res.Skipped)
		return finish(res), nil
	}
	if x.DryRun {
		res.Skipped = "dry run"
		res.Details = details(plan)
		return finish(res), nil
	}

	// Side files first, made durable before the transcript changes.
	t0 := time.Now()
	edits, sideBytes, err := x.writeSideFiles(ctx, src, ref, name, plan, now, log)
	if err != nil {
		return nil, err
	}
	res.SideBytes = sideBytes
	res.SideTime = time.Since(t0)
	t0 = time.Now()
	err = x.Editor.Rewrite(ctx, ref, version, edits)
	res.WriteTime = time.Since(t0)
	if err != nil {
		res.Skipped = err.Error()
		return finish(res), fmt.Errorf("extract %s: %w", name, err)
	}
	res.Written = true
	res.Details = details(plan)
	if st, err := os.Stat(ref.Path); err == nil {
		res.BytesAfter = st.Size()
	}
	log.Info("extraction pass", "session", name, "entries", res.Entries, "values", res.Values, "bytes_saved", res.BytesSaved)
	return finish(res), nil
}

// sideJob is one entry's side file to write.
type sideJob struct {
	p   *planned
	raw []byte
}

// writeSideFiles writes the side file of every planned entry, with the
// encoding and compression spread over the CPUs (lines are read in order
// and at most a few are held at once), makes them durable and returns the
// transcript edits.
func (x *Extractor) writeSideFiles(ctx context.Context, src *os.File, ref bs.SessionRef, name string, plan []planned, now time.Time, log bs.Logger) ([]bs.Edit, int64, error) {
	sideDir := SideDir(ref.Path, ref.ID)
	if err := os.MkdirAll(sideDir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("extract %s: create side dir: %w", name, err)
	}
	// Earlier side files of these entries (a value extracted by an earlier
	// pass, or an orphan of a pass whose rewrite failed) are merged; list
	// them once instead of probing for each entry.
	files, err := ListSideFiles(sideDir)
	if err != nil {
		return nil, 0, fmt.Errorf("extract %s: %w", name, err)
	}
	existing := make(map[string]bool, len(files))
	for id := range files {
		existing[id] = true
	}
	workers := runtime.GOMAXPROCS(0)
	if workers > 4 {
		workers = 4
	}
	jobs := make(chan sideJob, workers)
	var (
		mu        sync.Mutex
		firstErr  error
		sideBytes int64
		wg        sync.WaitGroup
		writers   = make([]*SideWriter, workers)
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	for w := 0; w < workers; w++ {
		sw := &SideWriter{CompressAbove: x.CompressAbove, Existing: existing, dirs: map[string]bool{sideDir: true}}
		writers[w] = sw
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				p := j.p
				rec := &Record{Session: name, EntryID: p.id}
				if existing[p.id] {
					if old, _, err := ReadRecord(sideDir, p.id); err == nil && !old.Legacy {
						rec = old
					}
				}
				rec.TriggerType, rec.ExtractedAt = string(p.trigger), now.UTC()
				for i, c := range p.cands {
					rec.Put(NewStoredValue(c.Pointer, c.Trigger, c.Block, j.raw[c.Start:c.End], p.repl[i], now))
				}
				_, n, err := sw.Write(sideDir, rec)
				if err != nil {
					fail(fmt.Errorf("extract %s: entry %s: %w", name, p.id, err))
					continue
				}
				mu.Lock()
				sideBytes += n
				mu.Unlock()
				log.Debug("extracted", "entry_id", p.id, "keys", p.keys(), "sizes_bytes", p.sizes(), "session", name)
			}
		}()
	}
	edits := make([]bs.Edit, 0, len(plan))
	var readErr error
	for i := range plan {
		p := &plan[i]
		if err := ctx.Err(); err != nil {
			readErr = err
			break
		}
		raw := make([]byte, p.length)
		if _, err := src.ReadAt(raw, p.offset); err != nil && err != io.EOF {
			readErr = fmt.Errorf("extract %s: read line %d: %w", name, p.line, err)
			break
		}
		edit := bs.Edit{Line: p.line, ID: p.id}
		for k, c := range p.cands {
			edit.Splices = append(edit.Splices, bs.Splice{Start: c.Start, End: c.End, With: p.repl[k]})
		}
		edits = append(edits, edit)
		jobs <- sideJob{p: p, raw: raw}
	}
	close(jobs)
	wg.Wait()
	for _, sw := range writers {
		sw.Close()
	}
	if readErr != nil {
		return nil, 0, readErr
	}
	if firstErr != nil {
		return nil, 0, firstErr
	}
	if err := writers[0].Sync(); err != nil {
		return nil, 0, fmt.Errorf("extract %s: %w", name, err)
	}
	return edits, sideBytes, nil
}

func (p *planned) keys() []string {
	out := make([]string, len(p.cands))
	for i, c := range p.cands {
		out[i] = c.Pointer
	}
	return out
}

func (p *planned) sizes() []int {
	out := make([]int, len(p.cands))
	for i, c := range p.cands {
		out[i] = c.Len()
	}
	return out
}

func details(plan []planned) []EntryResult {
	out := make([]EntryResult, 0, len(plan))
	for _, p := range plan {
		er := EntryResult{ID: p.id, Line: p.line, Type: string(p.trigger)}
		for i, c := range p.cands {
			er.Keys = append(er.Keys, c.Pointer)
			er.Sizes = append(er.Sizes, c.Len())
			er.BytesSaved += int64(c.Len() - len(p.repl[i]))
		}
		out = append(out, er)
	}
	return out
}
