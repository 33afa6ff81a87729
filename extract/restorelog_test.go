package extract_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/restorelogtest"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestWithRestores checks the one notion of "restored" Decide sees: the
// newer of the entry's "_restored" and the time the log holds for its id
// or its source key.
func TestWithRestores(t *testing.T) {
	p := extract.DefaultPolicy()
	p.AgeThreshold = 0
	line := func(extra string) *bs.Entry {
		return entry.Parse([]byte(toolResult("msg-456", 48*time.Hour, 600, extra)), 1, 0)
	}
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	stamp := func(ago time.Duration) string { return `,"_restored":"` + at(ago).Format(time.RFC3339Nano) + `"` }
	for _, tt := range []struct {
		name    string
		extra   string
		logged  map[string]time.Time
		want    time.Time
		extract bool
	}{
		{"no log, not restored", "", nil, time.Time{}, true},
		{"logged within the window", "", map[string]time.Time{"msg-456": at(5 * time.Minute)}, at(5 * time.Minute), false},
		{"logged after the window", "", map[string]time.Time{"msg-456": at(15 * time.Minute)}, at(15 * time.Minute), true},
		{"logged by its source key", "", map[string]time.Time{"tc-t": at(time.Minute)}, at(time.Minute), false},
		{"another entry's restore", "", map[string]time.Time{"other": at(time.Minute), "tc-u": at(time.Minute)}, time.Time{}, true},
		{"the log is newer than _restored", stamp(time.Hour), map[string]time.Time{"msg-456": at(time.Minute)}, at(time.Minute), false},
		{"_restored is newer than the log", stamp(time.Minute), map[string]time.Time{"msg-456": at(time.Hour)}, at(time.Minute), false},
		{"forced out despite the log", `,"_extractable":true`, map[string]time.Time{"msg-456": at(time.Minute)}, at(time.Minute), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := line(tt.extra)
			before := e.Restored
			got := extract.WithRestores(e, tt.logged)
			if !got.Restored.Equal(tt.want) {
				t.Errorf("restored at %v, want %v", got.Restored, tt.want)
			}
			if !e.Restored.Equal(before) {
				t.Error("WithRestores changed the entry it was given")
			}
			if d := extract.Decide(got, 10, p, now); d.Extract != tt.extract {
				t.Errorf("extract = %v, want %v (%s)", d.Extract, tt.extract, d.Reason)
			}
		})
	}
}

// TestExtractRestoreLog checks that the extraction pass skips an entry the
// log says was restored within keep_after_restore_seconds (by its id or
// by its source key), extracts it once the window is over or when the log
// keeps nothing for the session, and extracts nothing when the log cannot
// be read.
func TestExtractRestoreLog(t *testing.T) {
	hdr := `{"type":"session","version":3,"id":"rl","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`
	result := func(id, parent, call, text string) string {
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":%q,"toolName":"bash","content":[{"type":"text","text":%q}]}}`,
			id, parent, call, text)
	}
	data := []byte(strings.Join([]string{hdr,
		result("r1", "", "c1", strings.Repeat("one ", 1000)),
		result("r2", "r1", "c2", strings.Repeat("two ", 1000)),
	}, "\n") + "\n")
	clock := fixedClock{now}
	p := allTypes(500, 0)
	p.KeepAfterRestore = 10 * time.Minute
	for _, tt := range []struct {
		name    string
		log     bs.RestoreLog
		want    []string // the entries extracted
		wantErr bool
	}{
		{"no log", nil, []string{"r1", "r2"}, false},
		{"r1 restored 5 minutes ago", restorelogtest.Map{Times: map[string]time.Time{"r1": now.Add(-5 * time.Minute)}}, []string{"r2"}, false},
		{"r1 restored by its source key", restorelogtest.Map{Times: map[string]time.Time{"tc-c1": now.Add(-5 * time.Minute)}}, []string{"r2"}, false},
		{"r1 restored 15 minutes ago", restorelogtest.Map{Times: map[string]time.Time{"r1": now.Add(-15 * time.Minute)}}, []string{"r1", "r2"}, false},
		{"no log for the session", restorelogtest.Map{Err: fmt.Errorf("pi session: %w", bs.ErrInvalid)}, []string{"r1", "r2"}, false},
		{"the log cannot be read", restorelogtest.Map{Err: errors.New("disk on fire")}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ref, st := sessionOf(t, "rl", data)
			x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(st), Clock: clock, Restores: tt.log}
			res, err := x.Run(context.Background(), ref)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "restore log") {
					t.Fatalf("err %v, want one about the restore log", err)
				}
				if b, _ := os.ReadFile(ref.Path); !bytes.Equal(b, data) {
					t.Error("the transcript changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := extractedIDs(res); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("extracted %v, want %v (decisions %v)", got, tt.want, res.Counts)
			}
			if protected := 2 - len(tt.want); res.Counts[extract.CodeRestoreProtected] != protected {
				t.Errorf("restore_protected %d, want %d", res.Counts[extract.CodeRestoreProtected], protected)
			}
		})
	}
}
