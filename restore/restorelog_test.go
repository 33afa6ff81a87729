package restore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// callLog is a restore log that keeps the calls it gets, failing them
// with err when set.
type callLog struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (l *callLog) RecordRestore(_ context.Context, ref bs.SessionRef, id string, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("%s %s %s", ref.String(), id, at.Format(time.RFC3339)))
	return l.err
}

func (l *callLog) Restores(context.Context, bs.SessionRef) (map[string]time.Time, error) {
	return map[string]time.Time{}, l.err
}

func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// contentAt returns the raw "/message/content" of entry id in data.
func contentAt(t *testing.T, data []byte, id string) []byte {
	t.Helper()
	line := lineOf(t, data, id)
	a, b, ok := jsonedit.Find(line, "/message/content")
	if !ok {
		t.Fatalf("entry %s has no content", id)
	}
	return line[a:b]
}

// TestRestoreRecords checks that every restore that returns a value is
// recorded in the Restorer's log (applied, queued, already restored, a
// value stored at the source), that a log that fails does not fail the
// restore, and that Result.EntryContent is the entry's content exactly as
// before extraction whenever the values restored are its whole content.
func TestRestoreRecords(t *testing.T) {
	data, _ := basic()
	want := contentAt(t, data, "r1")
	stamp := "main/s1 r1 " + now.Format(time.RFC3339)
	for _, tt := range []struct {
		name string
		busy bool
		err  error
	}{
		{"applied", false, nil},
		{"queued", true, nil},
		{"the log fails", false, errors.New("disk on fire")},
		{"no log for the session", false, fmt.Errorf("pi: %w", bs.ErrInvalid)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, ref := extracted(t, data)
			r := newRestorer(dir)
			log := &callLog{err: tt.err}
			r.Restores = log
			if tt.busy {
				defer liveLock(t, ref.Path)()
			}
			res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Queued != tt.busy || res.Applied == tt.busy {
				t.Fatalf("applied %v, queued %v", res.Applied, res.Queued)
			}
			if got := log.take(); len(got) != 1 || got[0] != stamp {
				t.Errorf("log calls %q, want [%s]", got, stamp)
			}
			if !bytes.Equal(res.EntryContent, want) {
				t.Errorf("entry content\n%.200s\nwant\n%.200s", res.EntryContent, want)
			}
			// Again: the same content, recorded again.
			res, err = r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.AlreadyRestored == tt.busy {
				t.Errorf("second restore: already restored %v", res.AlreadyRestored)
			}
			if got := log.take(); len(got) != 1 || !bytes.Equal(res.EntryContent, want) {
				t.Errorf("second restore: log calls %q, entry content %.100s", got, res.EntryContent)
			}
		})
	}

	// No log: nothing breaks.
	dir, ref := extracted(t, data)
	if res, err := newRestorer(dir).Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{}); err != nil || !res.Restored {
		t.Fatalf("restore without a log: %v %+v", err, res)
	}
}

// TestEntryContentOnlyWhole checks that EntryContent is set only when the
// values restored make the entry's content whole: a thinking value (not in
// a tool result's content) or one of two extracted text blocks give none.
func TestEntryContentOnlyWhole(t *testing.T) {
	two := `{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":%q},{"type":"text","text":%q}],"isError":false,"timestamp":1771500000000}`
	data := transcript(
		msg{id: "u1", body: userMsg("go")},
		msg{id: "a1", body: assistantCall(long("think", 800), "call_1", "exec", `{"command":"ls"}`)},
		msg{id: "r1", body: fmt.Sprintf(two, long("first", 3000), long("second", 3000))},
		msg{id: "a2", body: assistantText("done")},
		msg{id: "u2", body: userMsg("thanks")},
		msg{id: "a3", body: assistantText("welcome")},
		msg{id: "u3", body: userMsg("bye")},
	)
	dir, ref := extracted(t, data)
	r := newRestorer(dir)
	res, err := r.Restore(ctx(), ref, "a1", nil, restore.RestoreOptions{})
	if err != nil || !res.Restored || res.EntryContent != nil {
		t.Fatalf("thinking restore: %v, restored %v, entry content %.80s", err, res.Restored, res.EntryContent)
	}
	res, err = r.Restore(ctx(), ref, "r1", []string{"content/0/text"}, restore.RestoreOptions{})
	if err != nil || !res.Restored || res.EntryContent != nil {
		t.Fatalf("restore of one block of two: %v, restored %v, entry content %.80s", err, res.Restored, res.EntryContent)
	}
	res, err = r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
	if err != nil || !bytes.Equal(res.EntryContent, contentAt(t, data, "r1")) {
		t.Fatalf("restore of the rest: %v, entry content %.80s", err, res.EntryContent)
	}
}

// TestPutBack checks the splice-back of a record's values into a line:
// the values holding their placeholder come back byte for byte, the rest
// of the line is kept, a line with nothing to put back is returned as it
// is, a value whose hash does not match stays a placeholder and is
// reported, and a source record's content is put back in place of the
// plugin's placeholder content.
func TestPutBack(t *testing.T) {
	orig := `{"type":"message","id":"r1","message":{"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"caf\u00e9 \ud83d\ude80 one"},{"type":"text","text":"two"}]},"x": 1 }`
	held := `{"type":"message","id":"r1","message":{"role":"toolResult","toolCallId":"c1","content":[{"type":"text","text":"[[extracted-r1]]"},{"type":"text","text":"[[extracted-r1]]"}]},"x": 1 }`
	value := func(path, raw string) extract.StoredValue {
		return extract.NewStoredValue(path, bs.TriggerToolResult, false, []byte(raw), []byte(`"[[extracted-r1]]"`), now)
	}
	rec := &extract.Record{EntryID: "r1", Values: []extract.StoredValue{
		value("/message/content/0/text", `"caf\u00e9 \ud83d\ude80 one"`), value("/message/content/1/text", `"two"`)}}
	bad := &extract.Record{EntryID: "r1", Values: []extract.StoredValue{rec.Values[0], rec.Values[1]}}
	bad.Values[1].Raw = []byte(`"tampered"`)

	srcHeld := `{"type":"message","id":"r2","message":{"role":"toolResult","toolCallId":"c2","content":[{"type":"text","text":"[[extracted-tc-c2]] stored outside"}]}}`
	srcOrig := `{"type":"message","id":"r2","message":{"role":"toolResult","toolCallId":"c2","content":[{"type":"text","text":"the whole result"}]}}`
	src := &extract.Record{EntryID: "tc-c2", Values: []extract.StoredValue{extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false,
		[]byte(`[{"type":"text","text":"the whole result"}]`), []byte(`[{"type":"text","text":"[[extracted-tc-c2]] stored outside"}]`), now)}}
	for _, tt := range []struct {
		name, line string
		rec        *extract.Record
		want       string
		paths      int
		corrupt    bool
	}{
		{"both values", held, rec, orig, 2, false},
		{"already back", orig, rec, orig, 0, false},
		{"one value corrupt", held, bad, strings.Replace(held, `"[[extracted-r1]]"`, `"caf\u00e9 \ud83d\ude80 one"`, 1), 1, true},
		{"a source record", srcHeld, src, srcOrig, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line := []byte(tt.line)
			got, paths, err := restore.PutBack(line, tt.rec)
			if string(got) != tt.want || len(paths) != tt.paths {
				t.Errorf("PutBack:\n%s\n%v\nwant\n%s", got, paths, tt.want)
			}
			if tt.corrupt != errors.Is(err, bs.ErrCorrupt) || (!tt.corrupt && err != nil) {
				t.Errorf("err %v, corrupt %v", err, tt.corrupt)
			}
			if string(line) != tt.line {
				t.Error("PutBack changed the line it was given")
			}
		})
	}
}

// TestSourceRecords checks that a restore of a value stored at the source
// is recorded under its key.
func TestSourceRecords(t *testing.T) {
	data, _ := basic()
	dir, ref := install(t, "s1", data)
	r := newRestorer(dir)
	log := &callLog{}
	r.Restores = log
	rec := &extract.Record{Session: ref.String(), EntryID: "tc-call_7", TriggerType: string(bs.TriggerToolResult), ExtractedAt: now}
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, []byte(`[{"type":"text","text":"out"}]`), []byte(`[]`), now))
	if _, err := extract.SaveRecord(ctx(), r.Side, ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := r.Side.Sync(ctx(), ref); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Source(ctx(), ref, "tc-call_7"); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); len(got) != 1 || got[0] != "main/s1 tc-call_7 "+now.Format(time.RFC3339) {
		t.Errorf("log calls %q", got)
	}
}
