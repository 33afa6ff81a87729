package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
)

// breakSession appends to a transcript an assistant message whose tool
// call has no result, and a user message after it: the tool pair a crash
// leaves unpaired, which a provider rejects.
func breakSession(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var last struct {
		ID string `json:"id"`
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.ID != "" {
			last = e
		}
	}
	if last.ID == "" {
		t.Fatalf("%s: no entry to append to", path)
	}
	tail := fmt.Sprintf(`{"type":"message","id":"dd000001","parentId":%q,"timestamp":"1999-12-30T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_lost","name":"read","arguments":{"path":"a.txt"}}],"stopReason":"toolUse","timestamp":946512000000}}
{"type":"message","id":"dd000002","parentId":"dd000001","timestamp":"1999-12-30T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"go on"}],"timestamp":946512001000}}
`, last.ID)
	if !bytes.HasSuffix(data, []byte("\n")) {
		tail = "\n" + tail
	}
	if err := os.WriteFile(path, append(data, tail...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestScheduledDoctor follows doctor_schedule on fake time: the default
// is on the schedule, a changed expression is rescheduled at once, a run
// logs the report and one warning per broken session and writes nothing,
// the next run keeps the diagnoses of unchanged sessions, "" takes the job
// off the schedule and a bad expression is refused with its field.
func TestScheduledDoctor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, sessions, lb := setup(t, daemon.Options{})
		broken := sessions[0]
		breakSession(t, broken.Path)
		leftover := filepath.Join(filepath.Dir(broken.Path), broken.ID+".jsonl.deleted.1999-12-01T00-00-00.000Z")
		if err := os.WriteFile(leftover, []byte(`{"type":"session","id":"gone"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// A file of the bubble's time, like the demo's (a file from the
		// future is no leftover yet).
		if err := os.Chtimes(leftover, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadFile(broken.Path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.Close() }()
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		st := d.Status().Doctor
		if st.Name != daemon.JobDoctor || st.Cron != config.DefaultDoctorSchedule || !st.Scheduled || st.NextRunAt == nil ||
			!st.NextRunAt.Equal(time.Date(2000, 1, 1, 3, 17, 0, 0, time.UTC)) {
			t.Fatalf("doctor status with the default schedule = %+v, want next_run_at 03:17", st)
		}
		// 00:01, before the first prune tick (00:02), which would rewrite
		// the sessions.
		if _, err := d.Config().Set(ctx, []byte(`{"doctor_schedule": "1 0 * * *"}`)); err != nil {
			t.Fatal(err)
		}
		if next := d.Status().Doctor.NextRunAt; next == nil || !next.Equal(time.Date(2000, 1, 1, 0, 1, 0, 0, time.UTC)) {
			t.Fatalf("doctor next_run_at after the change = %v, want 00:01", next)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		r, ok := d.Status().Doctor.LastResult.(*daemon.DoctorResult)
		if !ok || r == nil {
			t.Fatalf("no doctor result in the status: %+v", d.Status().Doctor)
		}
		if r.Sessions != 4 || r.Broken != 1 || r.Warn != 0 || r.OK != 3 || r.Failed != 0 || r.Stopped {
			t.Fatalf("doctor run = %+v, want 4 sessions, 1 broken, 3 ok", r)
		}
		t.Logf("doctor run: %+v", r)
		if !r.LeftoversScanned || r.LeftoverFiles != 1 || r.LeftoverBytes != 31 {
			t.Errorf("leftovers scanned %t: %d files, %d bytes; want the one .deleted file of 31 bytes", r.LeftoversScanned, r.LeftoverFiles, r.LeftoverBytes)
		}
		logs := lb.String()
		wantReport := fmt.Sprintf(`msg="doctor report" sessions=4 broken=1 warn=0 failed=0 leftover_files=%d leftover_bytes=%d unique_files=%d`,
			r.LeftoverFiles, r.LeftoverBytes, r.UniqueFiles)
		wantBroken := `level=WARN msg="doctor: session broken" session=main/` + broken.ID + ` missing_tool_results=1 orphan_tool_results=0`
		for _, want := range []string{wantReport, wantBroken} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %q:\n%s", want, logs)
			}
		}
		if n := strings.Count(logs, "doctor: session broken"); n != 1 {
			t.Errorf("%d broken-session warnings, want 1", n)
		}
		after, err := os.ReadFile(broken.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Error("the doctor report changed the broken transcript")
		}
		if _, err := os.Stat(leftover); err != nil {
			t.Errorf("the doctor report moved a leftover: %v", err)
		}

		// A second run keeps the diagnoses of the unchanged sessions.
		r2, err := d.RunDoctorNow(ctx)
		if err != nil || r2.Unchanged != 4 || r2.Broken != 1 {
			t.Fatalf("second doctor run = %+v, %v; want 4 unchanged, 1 broken", r2, err)
		}

		if _, err := d.Config().Set(ctx, []byte(`{"doctor_schedule": ""}`)); err != nil {
			t.Fatal(err)
		}
		if st := d.Status().Doctor; st.Scheduled || st.NextRunAt != nil {
			t.Fatalf("doctor status with doctor_schedule \"\" = %+v, want not scheduled", st)
		}
		_, err = d.Config().Set(ctx, []byte(`{"doctor_schedule": "every night"}`))
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("a bad doctor_schedule = %v, want a *config.ValidationError", err)
		}
		if msg, ok := ve.Field("doctor_schedule"); !ok || !strings.Contains(msg, `got "every night"`) {
			t.Errorf("doctor_schedule error %q, want it to show the expression", msg)
		}
	})
}
