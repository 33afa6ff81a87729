package api

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/doctor"
)

// DoctorReport is the answer of GET /api/doctor: the same shape as
// `brainsurgeon doctor --json` without "fixes" and "collect" (the API
// fixes and collects nothing).
type DoctorReport struct {
	// Sessions holds the diagnosis of every session diagnosed, in the
	// order the store lists them.
	Sessions []doctor.Report `json:"sessions"`
	// Errors lists the sessions that could not be diagnosed, each with
	// the reason: an empty list when every session was (where the CLI
	// leaves the member out).
	Errors []SessionError `json:"errors"`
	// Leftovers is the report of the host's leftovers.
	Leftovers doctor.LeftoverReport `json:"leftovers"`
}

// SessionError is a session that could not be diagnosed.
type SessionError struct {
	// Session is "agent/id".
	Session string `json:"session"`
	Error   string `json:"error"`
}

// doctor returns the Doctor over the API's stores and the request's
// Restorer (whose queue tells the pending write-backs).
func (s *server) doctor() *doctor.Doctor {
	return &doctor.Doctor{Store: s.set.Store, Side: s.set.Side, Restorer: s.restorerFor(), Logger: s.log}
}

// listDoctor returns the Doctor of the sessions list: it checks that the
// side store lists a record for each placeholder without reading the
// values (doctor.ValuesListed), and reads the write-back queue once for
// the whole list. The session detail and GET /api/doctor verify every
// value (s.doctor).
func (s *server) listDoctor() *doctor.Doctor {
	d := s.doctor()
	d.Values = doctor.ValuesListed
	return d.WithQueue()
}

// doctorReport answers GET /api/doctor?agent=: a diagnosis of every
// session (of one agent) and the leftovers report. Both are computed on
// the request, read-only; cancelling the request stops them.
func (s *server) doctorReport(r *http.Request) (any, error) {
	agent := r.URL.Query().Get("agent")
	if agent != "" {
		if err := checkSegment(agent); err != nil {
			return nil, fmt.Errorf("%w: %w", segmentError("agent", err), bs.ErrInvalid)
		}
	}
	ctx := r.Context()
	refs, err := s.listRefs(ctx, agent)
	if err != nil {
		return nil, err
	}
	reports := make([]*doctor.Report, len(refs))
	errs := make([]error, len(refs))
	if len(refs) > 0 {
		doc := s.doctor()
		work := make(chan int)
		var wg sync.WaitGroup
		for range min(runtime.GOMAXPROCS(0), len(refs), 8) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					reports[i], errs[i] = doc.Diagnose(ctx, refs[i])
				}
			}()
		}
	feed:
		for i := range refs {
			select {
			case work <- i:
			case <-ctx.Done():
				break feed
			}
		}
		close(work)
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	out := DoctorReport{Sessions: []doctor.Report{}, Errors: []SessionError{}}
	for i, rep := range reports {
		switch {
		case errs[i] != nil:
			out.Errors = append(out.Errors, SessionError{Session: refs[i].String(), Error: errs[i].Error()})
		case rep != nil:
			out.Sessions = append(out.Sessions, *rep)
		}
	}
	out.Leftovers, err = s.leftovers(ctx, agent)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// leftovers scans the host's leftovers (of one agent when agent is not
// empty) when the store can. A failed scan is reported in Skipped, as the
// CLI does; a cancelled request is an error.
func (s *server) leftovers(ctx context.Context, agent string) (doctor.LeftoverReport, error) {
	var keep func(string) bool
	if agent != "" {
		keep = func(a string) bool { return a == agent }
	}
	return doctor.ScanLeftovers(ctx, s.set.Store, keep)
}
