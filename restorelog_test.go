package brainsurgeon_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// errLog is a restore log that answers m, or fails with err.
type errLog struct {
	m   map[string]time.Time
	err error
}

func (l errLog) RecordRestore(context.Context, bs.SessionRef, string, time.Time) error { return l.err }

func (l errLog) Restores(context.Context, bs.SessionRef) (map[string]time.Time, error) {
	return l.m, l.err
}

// TestRestoresOf checks that no log, and a log that keeps nothing for the
// session, read as no restores and record nothing without an error, and
// that any other failure is returned.
func TestRestoresOf(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	boom := errors.New("disk on fire")
	for _, tt := range []struct {
		name    string
		log     bs.RestoreLog
		want    int
		wantErr error
	}{
		{"nil log", nil, 0, nil},
		{"a nil map", errLog{}, 0, nil},
		{"one restore", errLog{m: map[string]time.Time{"e1": at}}, 1, nil},
		{"unsupported session", errLog{err: fmt.Errorf("pi: %w", bs.ErrUnsupported)}, 0, nil},
		{"invalid session", errLog{err: fmt.Errorf("no agent: %w", bs.ErrInvalid)}, 0, nil},
		{"a failure", errLog{err: boom}, 0, boom},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ref := bs.SessionRef{Agent: "main", ID: "s1"}
			got, err := bs.RestoresOf(context.Background(), tt.log, ref)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("RestoresOf: err %v, want %v", err, tt.wantErr)
			}
			if err == nil && (got == nil || len(got) != tt.want) {
				t.Errorf("RestoresOf: %v, want %d restores (never nil)", got, tt.want)
			}
			if err := bs.RecordRestoreIn(context.Background(), tt.log, ref, "e1", at); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("RecordRestoreIn: err %v, want %v", err, tt.wantErr)
			}
		})
	}
}
