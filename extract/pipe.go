package extract

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// A pass writes its side records while it reads: the goroutine that
// parses a line that qualifies also encodes its record, and the records
// go to the side store (which hashes and compresses them) on worker
// goroutines while the rest of the transcript is still being read. Only
// the keep window, which is known when the read ends, can still turn a
// planned entry down: the newest planned records are therefore held back
// (holdBack bytes of them) until the read ends. In file order the
// window is the end of the transcript, so a held-back record is almost
// always where the window is decided; one sent earlier that the window
// then keeps (a leaf moved back to an old branch) is a harmless orphan,
// as after a failed rewrite.

// holdBack is how many bytes of encoded records a pass holds back until
// it knows the keep window. Tests make it small.
var holdBack int64 = 512 << 10

// batchTarget is the size of the batches of records put at once. Tests
// make it small.
var batchTarget int64 = 128 << 10

// sideJob is one side record to put.
type sideJob struct {
	id      string
	trigger bs.TriggerType
	// rec is the encoded record; nil when the entry has an earlier record
	// to merge vals into.
	rec   []byte
	vals  []StoredValue
	cands []bs.Candidate
}

// sidePipe puts the side records of a pass on worker goroutines and holds
// back the newest until the keep window is known.
type sidePipe struct {
	x     *Extractor
	ctx   context.Context
	ref   bs.SessionRef
	name  string
	now   time.Time
	log   bs.Logger
	debug bool
	// existing holds the ids with an earlier record and the time it was
	// written (see earlier).
	listOnce sync.Once
	existing map[string]time.Time
	listErr  error
	// reuseWithin is the pass's Policy.ReuseStoredWithin.
	reuseWithin time.Duration

	jobs chan []sideJob
	// batch collects the records to send, batchBytes their size: a Put
	// of several records costs the store's per-call work once.
	batch      []sideJob
	batchBytes int64
	// encoded is the size of the records put.
	encoded atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error

	// fifo holds the planned entries not yet sent, oldest first from
	// head. Those from tail on are the hold-back window, whose records
	// take window bytes; those before it save beyond bytes of transcript.
	fifo       []*planned
	head, tail int
	window     int64
	beyond     int64
	early      bool // records are sent before the read ends
	canEarly   bool // the session's side location is known (it has an id)
	minSaving  int64
}

// newSidePipe starts the workers of a pass's side pipe.
func (x *Extractor) newSidePipe(ctx context.Context, ref bs.SessionRef, name string, now time.Time, log bs.Logger, minSaving int64) *sidePipe {
	sp := &sidePipe{x: x, ctx: ctx, ref: ref, name: name, now: now, log: log, debug: bs.DebugEnabled(log),
		canEarly: ref.ID != "", minSaving: minSaving}
	workers := min(runtime.GOMAXPROCS(0), 4)
	sp.jobs = make(chan []sideJob, workers)
	for range workers {
		sp.wg.Add(1)
		go sp.work()
	}
	return sp
}

// earlier tells whether the session has a side record of entry id from
// an earlier pass (the new values are reused from it or merged into it),
// and when it was written. The session's records are listed once, when
// the first entry qualifies: a pass that extracts nothing does not pay
// for the listing.
func (sp *sidePipe) earlier(id string) (time.Time, bool, error) {
	sp.listOnce.Do(func() {
		infos, err := sp.x.Side.List(sp.ctx, sp.ref)
		if err != nil {
			sp.listErr = err
			return
		}
		sp.existing = make(map[string]time.Time, len(infos))
		for _, in := range infos {
			sp.existing[in.EntryID] = in.ModTime
		}
	})
	at, ok := sp.existing[id]
	return at, ok, sp.listErr
}

// holds reports whether the newest side record of entry id, written at,
// already holds every value of vals as it is now (Policy.ReuseStoredWithin):
// same path, sha256, size, placeholder and kind, and stored bytes that
// still match their hash. A record older than the policy allows, one
// that cannot be read and one of the first BrainSurgeon (no hashes) hold
// nothing.
func (sp *sidePipe) holds(id string, at time.Time, vals []StoredValue) bool {
	if sp.reuseWithin <= 0 || sp.now.Sub(at) >= sp.reuseWithin {
		return false
	}
	old, err := LoadRecord(sp.ctx, sp.x.Side, sp.ref, id)
	if err != nil || old.Legacy {
		return false
	}
	for _, v := range vals {
		o, ok := old.Value(v.Path)
		if !ok || o.SHA256 != v.SHA256 || o.Size != v.Size || o.Placeholder != v.Placeholder || o.Block != v.Block {
			return false
		}
		if _, err := o.Bytes(); err != nil {
			return false
		}
	}
	return true
}

func (sp *sidePipe) fail(err error) {
	sp.mu.Lock()
	if sp.err == nil {
		sp.err = err
	}
	sp.mu.Unlock()
}

// failed returns the first error of a worker.
func (sp *sidePipe) failed() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.err
}

func (sp *sidePipe) work() {
	defer sp.wg.Done()
	for batch := range sp.jobs {
		if sp.failed() != nil || sp.ctx.Err() != nil {
			continue // drain
		}
		recs := make([]bs.SideRecord, 0, len(batch))
		var n int64
		for _, j := range batch {
			data := j.rec
			if data == nil {
				var base *Record
				if old, err := LoadRecord(sp.ctx, sp.x.Side, sp.ref, j.id); err == nil && !old.Legacy {
					base = old
				}
				var err error
				if data, err = appendRecord(nil, sp.record(base, j.id, j.trigger, j.vals)); err != nil {
					sp.fail(fmt.Errorf("extract %s: encode side record of entry %s: %w", sp.name, j.id, err))
					break
				}
			}
			recs = append(recs, bs.SideRecord{EntryID: j.id, Data: data})
			n += int64(len(data))
		}
		if sp.failed() != nil {
			continue // drain
		}
		if err := sp.x.Side.Put(sp.ctx, sp.ref, recs); err != nil {
			sp.fail(fmt.Errorf("extract %s: entries %s…%s: %w", sp.name, batch[0].id, batch[len(batch)-1].id, err))
			continue
		}
		// The store keeps no Data once Put returned.
		for _, r := range recs {
			putRecordBuffer(r.Data)
		}
		sp.encoded.Add(n)
		if sp.debug {
			for _, j := range batch {
				sp.log.Debug("extracted", "entry_id", j.id, "keys", candKeys(j.cands), "sizes_bytes", candSizes(j.cands), "session", sp.name)
			}
		}
	}
}

// encode makes the side record of an entry that qualifies, on the
// goroutine that parsed it: its encoding, or, when the entry has an
// earlier record that the worker will merge into, its values with their
// bytes copied (e.Raw is valid only until the line is visited). When the
// earlier record already holds every value (see holds), nothing is to
// be written: reused is true.
func (sp *sidePipe) encode(e *bs.Entry, d Decision, repl [][]byte) (rec []byte, vals []StoredValue, reused bool, err error) {
	at, merge, err := sp.earlier(e.ID)
	if err != nil {
		return nil, nil, false, err
	}
	vals = make([]StoredValue, len(d.Candidates))
	for i, c := range d.Candidates {
		vals[i] = newStoredValue(c.Pointer, c.Trigger, c.Block, e.Raw[c.Start:c.End], repl[i], sp.now)
	}
	if merge {
		if sp.holds(e.ID, at, vals) {
			return nil, nil, true, nil
		}
		// Kept until the read ends: copies, not the parser's buffers.
		for i := range vals {
			vals[i].Path = strings.Clone(vals[i].Path)
			if vals[i].Raw != nil {
				vals[i].Raw = bytes.Clone(vals[i].Raw)
			}
		}
		return nil, vals, false, nil
	}
	r := sp.record(nil, e.ID, d.Type, vals)
	est := 512
	for _, v := range vals {
		est += len(v.Raw) + len(v.RawBase64) + len(v.Placeholder) + len(v.Path) + 200
	}
	rec, err = appendRecord(getRecordBuffer(est), r)
	return rec, nil, false, err
}

// record returns the side record of entry id with vals put into base
// (an earlier record of the entry) or into a new one.
func (sp *sidePipe) record(base *Record, id string, trigger bs.TriggerType, vals []StoredValue) *Record {
	rec := base
	if rec == nil {
		rec = &Record{Session: sp.name, EntryID: id}
	}
	rec.TriggerType, rec.ExtractedAt = string(trigger), sp.now.UTC()
	rec.Put(vals...)
	return rec
}

// Record encodings are a pass's main allocation (as many bytes as it
// extracts): their buffers are reused once the store has them, which
// spares the collector most of its work under a memory limit. The free
// lists hold buffers of 1 KB to 1 MB, one list per power of two, and at
// most 256 KB of each size (a sync.Pool kept more alive between
// collections than it saved).
var recordBuffers = func() (l [11]chan []byte) {
	for k := range l {
		l[k] = make(chan []byte, max(1, (256<<10)>>(10+k)))
	}
	return l
}()

// bufferClass returns the list whose buffers hold n bytes, or -1.
func bufferClass(n int) int {
	for k := range recordBuffers {
		if n <= 1<<(10+k) {
			return k
		}
	}
	return -1
}

// getRecordBuffer returns an empty buffer that holds n bytes.
func getRecordBuffer(n int) []byte {
	k := bufferClass(n)
	if k < 0 {
		return make([]byte, 0, n)
	}
	select {
	case b := <-recordBuffers[k]:
		return b[:0]
	default:
		return make([]byte, 0, 1<<(10+k))
	}
}

// putRecordBuffer keeps b for reuse when it came from getRecordBuffer
// (its capacity is a list's size) and its list has room.
func putRecordBuffer(b []byte) {
	if k := bufferClass(cap(b)); k >= 0 && cap(b) == 1<<(10+k) {
		select {
		case recordBuffers[k] <- b:
		default:
		}
	}
}

// send hands p's record to the workers.
func (sp *sidePipe) send(p *planned) error {
	sp.batch = append(sp.batch, sideJob{id: p.id, trigger: p.trigger, rec: p.rec, vals: p.vals, cands: p.cands})
	sp.batchBytes += p.size()
	p.rec, p.vals, p.sent = nil, nil, true
	if sp.batchBytes < batchTarget {
		return nil
	}
	return sp.flush()
}

// flush hands the batch to the workers.
func (sp *sidePipe) flush() error {
	if len(sp.batch) == 0 {
		return nil
	}
	b := sp.batch
	sp.batch, sp.batchBytes = nil, 0
	select {
	case sp.jobs <- b:
		return nil
	case <-sp.ctx.Done():
		return sp.ctx.Err()
	}
}

// add takes the newest planned entry p and sends the
// records that fall out of the hold-back window. Nothing is sent before
// the entries out of the window save minSaving bytes, so that a pass
// skipped for saving too little writes no side record.
func (sp *sidePipe) add(p *planned) error {
	if err := sp.failed(); err != nil {
		return err
	}
	sp.fifo = append(sp.fifo, p)
	sp.window += p.size()
	for sp.window > holdBack {
		k := sp.fifo[sp.tail]
		sp.window -= k.size()
		sp.beyond += k.saving()
		sp.tail++
	}
	if !sp.canEarly || sp.head == sp.tail || (!sp.early && sp.beyond < sp.minSaving) {
		return nil
	}
	sp.early = true
	for ; sp.head < sp.tail; sp.head++ {
		k := sp.fifo[sp.head]
		sp.fifo[sp.head] = nil
		if k.rec == nil {
			// A record to merge into an earlier one: sent early, a
			// decision reversed at the end (a duplicate id) would leave
			// the earlier record replaced. Merges are rare: held to the end.
			continue
		}
		if err := sp.send(k); err != nil {
			return err
		}
	}
	sp.beyond = 0
	if sp.head > 1024 && sp.head > len(sp.fifo)/2 {
		n := copy(sp.fifo, sp.fifo[sp.head:])
		sp.fifo = sp.fifo[:n]
		sp.tail -= sp.head
		sp.head = 0
	}
	return nil
}

// close sends the last batch (unless abandon), waits for the workers
// and returns the first error.
func (sp *sidePipe) close(abandon bool) error {
	var err error
	if !abandon {
		err = sp.flush()
	}
	close(sp.jobs)
	sp.wg.Wait()
	if ferr := sp.failed(); ferr != nil {
		return ferr
	}
	return err
}
