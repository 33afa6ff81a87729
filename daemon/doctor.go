package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// JobDoctor is the doctor report job, on doctor_schedule.
const JobDoctor = "doctor"

// DoctorResult is the outcome of one doctor report run: a diagnosis of
// every session and a scan of the host's leftovers. The run writes
// nothing: it neither fixes a session nor collects a leftover.
type DoctorResult struct {
	// StartedAt is when the run started; Elapsed how long it took.
	StartedAt time.Time     `json:"started_at"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	// Stopped is true when shutdown stopped the run between sessions.
	Stopped bool `json:"stopped"`
	// Sessions counts the sessions diagnosed; Unchanged those whose
	// diagnosis was kept from an earlier run because the session did not
	// change since (its store's Version is the same).
	Sessions  int `json:"sessions"`
	Unchanged int `json:"unchanged"`
	// Broken, Warn and OK count the sessions by health
	// (doctor.HealthBroken, HealthWarn, HealthOK); Failed those that
	// could not be diagnosed.
	Broken int `json:"broken"`
	Warn   int `json:"warn"`
	OK     int `json:"ok"`
	Failed int `json:"failed"`
	// LeftoverFiles and LeftoverBytes are the host's leftovers found;
	// UniqueFiles those that still hold history that exists nowhere else.
	// LeftoversScanned is false when the store has no leftover scan (or
	// it failed: see Errors).
	LeftoverFiles    int   `json:"leftover_files"`
	LeftoverBytes    int64 `json:"leftover_bytes"`
	UniqueFiles      int   `json:"unique_files"`
	LeftoversScanned bool  `json:"leftovers_scanned"`
	// Errors holds the first error messages (sessions that could not be
	// diagnosed, files the scan skipped), at most 20.
	Errors []string `json:"errors,omitempty"`
}

func (r *DoctorResult) addError(msg string) {
	if len(r.Errors) < maxErrors {
		r.Errors = append(r.Errors, msg)
	}
}

// doctorCache keeps each session's last diagnosis by its store's
// Version, so that a run diagnoses only the sessions that changed.
// Pending write-backs are part of a diagnosis too, and a session the host
// was using leaves its last turn's calls out: such a session is diagnosed
// again on every run.
type doctorCache struct {
	mu sync.Mutex
	m  map[string]doctorCached
}

type doctorCached struct {
	ver    bs.Version
	report *doctor.Report
}

// RunDoctorNow runs the doctor report now and returns its result, as a
// scheduled run does (and logs it the same way). It writes nothing, so it
// runs in read-only mode as well; it fails with an error wrapping
// brainsurgeon.ErrBusy while a doctor run is going.
func (d *Daemon) RunDoctorNow(ctx context.Context) (*DoctorResult, error) {
	res, err := d.run(ctx, &d.doctorJob, func(ctx context.Context) (any, error) { return d.runDoctor(ctx) })
	r, _ := res.(*DoctorResult)
	return r, err
}

// runDoctor diagnoses every session (the unchanged ones from the cache),
// scans the host's leftovers, and logs one "doctor report" line plus one
// warning per broken session. It stops between sessions when ctx is
// cancelled.
func (d *Daemon) runDoctor(ctx context.Context) (*DoctorResult, error) {
	d.trace(ctx, "runDoctor: start")
	start := time.Now()
	res := &DoctorResult{StartedAt: start.UTC()}
	defer func() { res.Elapsed = time.Since(start) }()
	cfg := d.cfg.Get()
	set, err := d.open(ctx, cfg)
	if err != nil {
		return res, err
	}
	// The report runs on every session each time: it checks that the side
	// store lists each placeholder's record without reading the values,
	// and reads the write-back queue once (brainsurgeon doctor and the
	// session detail verify every value).
	doc := &doctor.Doctor{Store: set.Store, Side: set.Side, Logger: d.log,
		Restorer: restore.New(set.Store, set.Side, set.StateDir), Values: doctor.ValuesListed}
	doc.Restorer.Logger = d.log
	doc = doc.WithQueue()

	refs, skipped, err := set.Store.Sessions(ctx)
	if err != nil {
		return res, fmt.Errorf("doctor: list sessions: %w", err)
	}
	for _, e := range skipped {
		d.log.Warn("sessions not listed", "error", e)
		res.addError(e.Error())
	}
	stats := statAll(ctx, set.Store, refs)
	d.doctorCache.mu.Lock()
	prev := d.doctorCache.m
	d.doctorCache.mu.Unlock()
	next := make(map[string]doctorCached, len(refs))
	for i, ref := range refs {
		if ctx.Err() != nil {
			res.Stopped = true
			break
		}
		ver := stats[i].Stat.Version
		stamped := stats[i].Err == nil && !ver.IsZero()
		var rep *doctor.Report
		if c, ok := prev[ref.Identity()]; ok && stamped && c.ver.Equal(ver) && c.report.Pending == 0 && !c.report.Busy {
			rep = c.report
			res.Unchanged++
		} else {
			rep, err = doc.Diagnose(ctx, ref)
			if err != nil {
				if ctx.Err() != nil {
					res.Stopped = true
					break
				}
				res.Failed++
				res.addError(fmt.Sprintf("%s: %v", ref, err))
				d.log.Warn("doctor: session not diagnosed", "session", ref.String(), "error", err)
				continue
			}
		}
		if stamped {
			next[ref.Identity()] = doctorCached{ver: ver, report: rep}
		}
		res.Sessions++
		switch rep.Health {
		case doctor.HealthBroken:
			res.Broken++
			d.log.Warn("doctor: session broken", "session", ref.String(),
				"missing_tool_results", rep.MissingResults, "orphan_tool_results", rep.OrphanResults,
				"displaced_tool_results", rep.DisplacedResults)
		case doctor.HealthWarn:
			res.Warn++
		default:
			res.OK++
		}
	}
	if !res.Stopped {
		d.doctorCache.mu.Lock()
		d.doctorCache.m = next
		d.doctorCache.mu.Unlock()
		d.scanLeftovers(ctx, set.Store, res)
	}
	if res.Stopped {
		d.log.Info("doctor: stopped by shutdown", "sessions", res.Sessions)
		return res, nil
	}
	d.log.Info("doctor report", "sessions", res.Sessions, "broken", res.Broken, "warn", res.Warn,
		"failed", res.Failed, "leftover_files", res.LeftoverFiles, "leftover_bytes", res.LeftoverBytes,
		"unique_files", res.UniqueFiles)
	return res, nil
}

// scanLeftovers adds the host's leftovers to res when the store can scan
// for them.
func (d *Daemon) scanLeftovers(ctx context.Context, store bs.Store, res *DoctorResult) {
	sc, ok := store.(bs.LeftoverScanner)
	if !ok {
		d.log.Debug("doctor: the store does not scan for leftovers")
		return
	}
	found, skipped, err := sc.Leftovers(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			res.Stopped = true
			return
		}
		d.log.Warn("doctor: the leftover scan failed", "error", err)
		res.addError("leftovers: " + err.Error())
		return
	}
	res.LeftoversScanned = true
	for _, e := range skipped {
		d.log.Warn("doctor: a leftover was not classified", "error", e)
		res.addError(e.Error())
	}
	for _, l := range found {
		res.LeftoverFiles++
		res.LeftoverBytes += l.Bytes
		if l.Unique {
			res.UniqueFiles++
		}
	}
}
