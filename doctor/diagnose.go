package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// RefusedSQLite is why Fix refuses a session of OpenClaw's SQLite store.
const RefusedSQLite = "BrainSurgeon never inserts or re-parents rows of OpenClaw's SQLite store: the host owns its event sequence; the diagnosis above is complete"

// refusal returns why Fix cannot write to the session's store, or "" when
// it can. Only the JSONL store takes inserted entries and new parents:
// the SQLite store never inserts rows, and a store this package does not
// know is not trusted with structural edits.
func refusal(ref bs.SessionRef) string {
	switch ref.Backend {
	case "", bs.BackendJSONL:
		return ""
	case bs.BackendSQLite:
		return RefusedSQLite
	default:
		return fmt.Sprintf("the %q store does not take inserted entries; the diagnosis above is complete", ref.Backend)
	}
}

// openClaw reports whether the session is OpenClaw's (it has an agent, or
// lives in OpenClaw's SQLite store) rather than pi's.
func openClaw(ref bs.SessionRef) bool { return ref.Agent != "" || ref.Backend == bs.BackendSQLite }

// syntheticText is the text of the host's synthetic tool result.
func syntheticText(ref bs.SessionRef) string {
	if openClaw(ref) {
		return openClawMissingText
	}
	return piMissingText
}

// Unpaired counts the session's unpaired tool blocks: missing, orphan and
// displaced tool results. Any of them makes the session broken.
func (r *Report) Unpaired() int { return r.MissingResults + r.OrphanResults + r.DisplacedResults }

// diagnosis is a Report with what Fix needs to plan from it.
type diagnosis struct {
	rep *Report
	tr  bs.Transcript
	an  *analysis
	ids map[string]bool
}

// Diagnose reads the session and reports its problems. It writes nothing.
// It reads the transcript once (message envelopes, and the pairing fields
// of assistant and toolResult lines); the side store only when the
// transcript holds placeholders (every value with ValuesVerify, the
// listing only with ValuesListed); and the write-back queue (or the
// snapshot WithQueue took).
func (d *Doctor) Diagnose(ctx context.Context, ref bs.SessionRef) (*Report, error) {
	dg, err := d.diagnose(ctx, ref)
	if err != nil {
		return nil, err
	}
	return dg.rep, nil
}

// Reading is a diagnosis made in a read of the transcript that its caller
// does anyway (the sessions list counts entries in the same read): pass
// Want and Visit on from the caller's brainsurgeon.Visitor (Want: true
// when either wants the line parsed fully), then call Report with the
// transcript the store returned. A Reading serves one read.
type Reading struct {
	d            *Doctor
	infos        map[int]*msgInfo
	callLines    map[string][]int
	ids          map[string]bool
	placeholders bool
	keys         map[string]int // with ValuesListed: the side key of each placeholder → its line
}

// Reading returns a Reading for one read of one transcript.
func (d *Doctor) Reading() *Reading {
	return &Reading{d: d, infos: map[int]*msgInfo{}, callLines: map[string][]int{}, ids: map[string]bool{}, keys: map[string]int{}}
}

// Want tells whether the diagnosis needs the line parsed fully: only the
// lines that may be assistant or toolResult messages (their string values
// with pointers, see parseMessage); the others give their envelope only.
func (r *Reading) Want(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"assistant"`)) || bytes.Contains(raw, []byte(`"toolResult"`))
}

// Visit takes what the diagnosis needs of one line.
func (r *Reading) Visit(e *bs.Entry) error {
	if e.Kind != bs.KindEntry {
		return nil
	}
	if e.ID != "" {
		r.ids[e.ID] = true
	}
	if bytes.Contains(e.Raw, placeholderMark) {
		r.placeholders = true
		if r.d.Values == ValuesListed {
			if extract.IsPlaceholderValue(e.Raw, e.ID) {
				r.keys[e.ID] = e.Line
			}
			if k := extract.SourceKeyOf(e); k != "" && extract.IsPlaceholderValue(e.Raw, k) {
				r.keys[k] = e.Line
			}
		}
	}
	if e.Type != "message" || (e.Role != "assistant" && e.Role != "toolResult") {
		return nil
	}
	m := parseMessage(e)
	if m == nil {
		return nil
	}
	if m.role == "assistant" && len(m.calls) == 0 && !m.failed() {
		return nil // nothing to pair
	}
	r.infos[e.Line] = m
	for _, c := range m.calls {
		r.callLines[c.id] = append(r.callLines[c.id], e.Line)
	}
	return nil
}

// Report finishes the diagnosis of tr, the transcript of the read whose
// lines Visit saw. Like Diagnose, it writes nothing.
func (r *Reading) Report(ctx context.Context, tr bs.Transcript) (*Report, error) {
	if r.d == nil || r.d.Store == nil {
		return nil, fmt.Errorf("doctor: no store: %w", bs.ErrInvalid)
	}
	dg, err := r.d.finish(ctx, tr, r)
	if err != nil {
		return nil, err
	}
	return dg.rep, nil
}

// placeholderMark starts every placeholder.
var placeholderMark = []byte(extract.PlaceholderPrefix)

func (d *Doctor) diagnose(ctx context.Context, ref bs.SessionRef) (*diagnosis, error) {
	if d == nil || d.Store == nil {
		return nil, fmt.Errorf("doctor %s: no store: %w", ref, bs.ErrInvalid)
	}
	r := d.Reading()
	tr, err := d.Store.Open(ctx, ref, &bs.Visitor{Want: r.Want, Visit: r.Visit})
	if err != nil {
		return nil, fmt.Errorf("doctor %s: %w", ref, err)
	}
	return d.finish(ctx, tr, r)
}

// finish makes the diagnosis of tr from what r collected in its read.
func (d *Doctor) finish(ctx context.Context, tr bs.Transcript, r *Reading) (*diagnosis, error) {
	infos, callLines, ids, placeholders, keys := r.infos, r.callLines, r.ids, r.placeholders, r.keys
	ref := tr.Ref()
	nodes := tr.Nodes()
	rep := &Report{Session: ref.String(), Agent: ref.Agent, SessionID: ref.ID, Backend: ref.Backend, Problems: []Problem{}}
	if rep.Backend == "" {
		rep.Backend = bs.BackendJSONL
	}

	an := analyse(tr, infos, callLines)
	if an.trailing {
		if err := d.Store.CheckIdle(ctx, ref); errors.Is(err, bs.ErrBusy) {
			rep.Busy = true
			an.missing = an.missing[:len(an.missing)-1]
		}
	}
	rep.Problems = append(rep.Problems, an.problems...)
	rep.Problems = append(rep.Problems, an.missingProblems(nodes, syntheticText(ref))...)
	rep.OrphanResults = len(an.problems) - an.displaced
	rep.DisplacedResults = an.displaced
	for _, g := range an.missing {
		rep.MissingResults += len(g.calls)
	}

	for _, le := range tr.Malformed() {
		rep.Problems = append(rep.Problems, Problem{Kind: KindMalformed, Line: le.Line,
			Detail: fmt.Sprintf("line %d is not one JSON object (%v); it is kept as it is and the host skips it", le.Line, le.Err),
			Fix:    "not fixable by the doctor: the line is kept byte for byte"})
		rep.Malformed++
	}

	if placeholders && d.Side != nil && d.Values == ValuesListed {
		if len(keys) > 0 {
			infos, err := d.Side.List(ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("doctor %s: list side records: %w", ref, err)
			}
			listed := make(map[string]bool, len(infos))
			for _, in := range infos {
				listed[in.EntryID] = true
			}
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				if listed[k] {
					continue
				}
				p := Problem{Kind: KindMissingValue, Line: keys[k],
					Detail: fmt.Sprintf("placeholder of side record %s: the side store has no record %s", k, k),
					Fix:    "not fixable by the doctor: the value is not in the side store"}
				if n, ok := tr.Node(k); ok {
					p.EntryID = n.ID
				}
				rep.Problems = append(rep.Problems, p)
				rep.MissingValues++
			}
		}
	} else if placeholders && d.Side != nil {
		vr, err := restore.Verify(ctx, d.Store, d.Side, ref)
		if err != nil {
			return nil, fmt.Errorf("doctor %s: %w", ref, err)
		}
		for _, p := range vr.Problems {
			rep.Problems = append(rep.Problems, Problem{Kind: KindMissingValue, Line: p.Line, EntryID: p.EntryID,
				Detail: fmt.Sprintf("placeholder at %s: %s: %s", p.Path, p.Kind, p.Detail),
				Fix:    "not fixable by the doctor: the value is not in the side store"})
			rep.MissingValues++
		}
	}

	if d.Restorer != nil {
		reqs := d.queue
		if !d.queued {
			var err error
			if reqs, err = d.Restorer.Pending(); err != nil {
				return nil, fmt.Errorf("doctor %s: pending write-backs: %w", ref, err)
			}
		}
		for _, q := range reqs {
			if !(bs.SessionRef{Backend: q.Backend, Agent: q.Agent, ID: q.SessionID}).Same(ref) {
				continue
			}
			p := Problem{Kind: KindPending, EntryID: q.EntryID,
				Detail: fmt.Sprintf("%s of entry %s queued at %s, waiting for the session to be idle", q.Kind, q.EntryID, q.RequestedAt.UTC().Format("2006-01-02T15:04:05Z")),
				Fix:    "not the doctor's: the queue is applied when the host leaves the session idle (brainsurgeon pending)"}
			if n, ok := tr.Node(q.EntryID); ok {
				p.Line = n.Line
			}
			rep.Problems = append(rep.Problems, p)
			rep.Pending++
		}
	}
	sort.SliceStable(rep.Problems, func(i, j int) bool { return rep.Problems[i].Line < rep.Problems[j].Line })

	switch {
	case rep.Unpaired() > 0:
		rep.Health = HealthBroken
	case rep.MissingValues+rep.Pending+rep.Malformed > 0:
		rep.Health = HealthWarn
	default:
		rep.Health = HealthOK
	}
	if rep.Unpaired() > 0 {
		if why := refusal(ref); why != "" {
			rep.FixRefused = why
			for i := range rep.Problems {
				p := &rep.Problems[i]
				if p.Kind == KindMissingResult || p.Kind == KindOrphanResult || p.Kind == KindDisplacedResult {
					if p.Fixable {
						p.Fix = "refused: " + why
					}
					p.Fixable = false
				}
			}
		}
	}
	for _, p := range rep.Problems {
		if p.Fixable {
			rep.Fixable = true
			break
		}
	}
	return &diagnosis{rep: rep, tr: tr, an: an, ids: ids}, nil
}
