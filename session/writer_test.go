package session_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// wtHelperEnv selects what TestWriterHelperProcess does in a child.
const wtHelperEnv = "BS_SESSION_WRITER_HELPER"

// TestWriterHelperProcess is not a test: re-run as a child process (the
// os.Args[0] helper-process pattern) it holds a pid alive ("hold") or
// appends entries without any lock ("append").
func TestWriterHelperProcess(t *testing.T) {
	switch os.Getenv(wtHelperEnv) {
	case "":
		return
	case "hold":
		fmt.Println("ready")
		time.Sleep(60 * time.Second)
	case "append":
		n, _ := strconv.Atoi(os.Getenv("BS_COUNT"))
		if err := wtAppendLoop(os.Getenv("BS_FILE"), n); err != nil {
			fmt.Fprintln(os.Stderr, "appender:", err)
			os.Exit(3)
		}
	}
	os.Exit(0)
}

// wtHelper returns a command re-running the test binary as a helper.
func wtHelper(mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{wtHelperEnv + "=" + mode}, env...)...)
	return cmd
}

// wtLivePID starts a helper that stays alive until the test ends.
func wtLivePID(t *testing.T) int {
	t.Helper()
	cmd := wtHelper("hold")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper did not start: %q %v", line, err)
	}
	return cmd.Process.Pid
}

// wtDeadPID returns the pid of a process that has exited and been reaped.
func wtDeadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// wtLockPayload is OpenClaw's lock payload.
func wtLockPayload(pid int, at time.Time) []byte {
	return fmt.Appendf(nil, "{\n  \"pid\": %d,\n  \"createdAt\": %q\n}\n", pid, at.UTC().Format("2006-01-02T15:04:05.000Z"))
}

// wtStatVersion is the transcript's version from one stat(2), as
// session.Open computes it, without reading the file.
func wtStatVersion(path string) (bs.Version, error) {
	st, err := hostfile.Fingerprint(path)
	if err != nil {
		return bs.Version{}, err
	}
	return st.Version(), nil
}

type wtClock struct{ t time.Time }

func (c wtClock) Now() time.Time { return c.t }

func wtSHA(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func wtVersion(t *testing.T, path string) bs.Version {
	t.Helper()
	tr, err := session.Open(context.Background(), path, bs.SessionRef{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Version()
}

// wtTranscript writes a transcript whose mtime is an hour ago and returns
// its ref.
func wtTranscript(t *testing.T, content string) bs.SessionRef {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "s1.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return bs.SessionRef{Agent: "main", ID: "s1", Path: p, Status: "done"}
}

func wtTempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".bs-tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func wtExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestApplyEdits(t *testing.T) {
	sp := func(start, end int, with string) bs.Splice {
		return bs.Splice{Start: start, End: end, With: []byte(with)}
	}
	for _, tc := range []struct {
		name  string
		in    string
		edits []bs.Edit
		want  string
		err   error
		msg   string
	}{
		{"NoEdits", "a\nb\n", nil, "a\nb\n", nil, ""},
		{"NoEditsEmptyInput", "", nil, "", nil, ""},
		{"SpliceMiddle", "{\"a\":\"xyz\"}\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(5, 10, `"Q"`)}}}, "{\"a\":\"Q\"}\n", nil, ""},
		{"SpliceAtStart", "abc\ndef\n", []bs.Edit{{Line: 2, Splices: []bs.Splice{sp(0, 1, "XX")}}}, "abc\nXXef\n", nil, ""},
		{"SpliceAtEnd", "abc\ndef\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(3, 3, "!")}}}, "abc!\ndef\n", nil, ""},
		{"DeleteWholeLineContent", "abc\ndef\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(0, 3, "")}}}, "\ndef\n", nil, ""},
		{"SeveralSplicesOneLine", "0123456789\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(0, 1, "a"), sp(1, 1, "+"), sp(4, 6, ""), sp(9, 10, "z")}}},
			"a+123678z\n", nil, ""},
		{"EditsInAnyOrder", "l1\nl2\nl3\nl4\n", []bs.Edit{
			{Line: 4, Splices: []bs.Splice{sp(0, 2, "D")}},
			{Line: 2, Splices: []bs.Splice{sp(0, 2, "B")}},
		}, "l1\nB\nl3\nD\n", nil, ""},
		{"CRLFLineKeepsCR", "ab\r\ncd\r\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(1, 2, "X")}}}, "aX\r\ncd\r\n", nil, ""},
		{"SpliceMayTouchCR", "ab\r\ncd\r\n", []bs.Edit{{Line: 2, Splices: []bs.Splice{sp(2, 3, "")}}}, "ab\r\ncd\n", nil, ""},
		{"LastLineWithoutNewline", "ab\ncd", []bs.Edit{{Line: 2, Splices: []bs.Splice{sp(2, 2, "e")}}}, "ab\ncde", nil, ""},
		{"UneditedLastLineWithoutNewline", "ab\ncd", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(0, 0, "<")}}}, "<ab\ncd", nil, ""},
		{"ZeroLengthLine", "a\n\nb\n", []bs.Edit{{Line: 2, Splices: []bs.Splice{sp(0, 0, "{}")}}}, "a\n{}\nb\n", nil, ""},
		{"EditWithoutSplices", "{}\n{\"id\":\"b\"}\n", []bs.Edit{{Line: 2, ID: "b"}}, "{}\n{\"id\":\"b\"}\n", nil, ""},
		{"IDMatches", "{\"id\":\"e1\",\"v\":\"old\"}\n", []bs.Edit{{Line: 1, ID: "e1", Splices: []bs.Splice{sp(15, 20, `"new"`)}}},
			"{\"id\":\"e1\",\"v\":\"new\"}\n", nil, ""},
		{"IDWithEscapes", "{\"id\":\"a\\\"b\\\\c\\n\"}\n", []bs.Edit{{Line: 1, ID: "a\"b\\c\n"}}, "{\"id\":\"a\\\"b\\\\c\\n\"}\n", nil, ""},
		{"IDMismatch", "{\"id\":\"e1\"}\n{\"id\":\"e2\"}\n", []bs.Edit{{Line: 2, ID: "e1"}}, "", bs.ErrChanged, "line 2 does not hold entry id \"e1\""},
		{"IDIsNotASubstringMatch", "{\"id\":\"e12\"}\n", []bs.Edit{{Line: 1, ID: "e1"}}, "", bs.ErrChanged, "entry id"},
		{"PastEOF", "a\nb\n", []bs.Edit{{Line: 3}}, "", bs.ErrChanged, "has only 2 lines"},
		{"PastEOFNoTrailingNewline", "a\nb", []bs.Edit{{Line: 3}}, "", bs.ErrChanged, "has only 2 lines"},
		{"PastEOFEmptyInput", "", []bs.Edit{{Line: 1}}, "", bs.ErrChanged, "has only 0 lines"},
		{"Overlapping", "0123456789\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(0, 5, ""), sp(4, 6, "")}}}, "", bs.ErrInvalid, "overlaps"},
		{"UnsortedSplices", "0123456789\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(5, 6, ""), sp(0, 1, "")}}}, "", bs.ErrInvalid, "overlaps or precedes"},
		{"NegativeStart", "0123\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(-1, 1, "")}}}, "", bs.ErrInvalid, "bad range"},
		{"EndBeforeStart", "0123\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(3, 2, "")}}}, "", bs.ErrInvalid, "bad range"},
		{"SplicePastLineEnd", "0123\n4567\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(2, 5, "")}}}, "", bs.ErrInvalid, "past the end of the line (4 bytes)"},
		{"SpliceCannotEatNewline", "0123\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(4, 5, "")}}}, "", bs.ErrInvalid, "past the end"},
		{"LineZero", "a\n", []bs.Edit{{Line: 0}}, "", bs.ErrInvalid, "start at 1"},
		{"TwoEditsOfOneLine", "a\n", []bs.Edit{{Line: 1}, {Line: 1}}, "", bs.ErrInvalid, "two edits of line 1"},
		{"SumMatches", "a\nb\n", []bs.Edit{{Line: 2, Sum: bs.LineSum([]byte("b")), Splices: []bs.Splice{sp(1, 1, "!")}}}, "a\nb!\n", nil, ""},
		{"SumMismatch", "a\nb\n", []bs.Edit{{Line: 2, Sum: bs.LineSum([]byte("c"))}}, "", bs.ErrChanged, "checksum differs"},
		// Structural edits: inserted lines follow the (spliced) line.
		{"InsertAfterFirst", "l1\nl2\nl3\n", []bs.Edit{{Line: 1, Insert: [][]byte{[]byte("n1"), []byte("n2")}}}, "l1\nn1\nn2\nl2\nl3\n", nil, ""},
		{"InsertAfterMiddle", "l1\nl2\nl3\n", []bs.Edit{{Line: 2, Insert: [][]byte{[]byte("n1")}}}, "l1\nl2\nn1\nl3\n", nil, ""},
		{"InsertAfterLast", "l1\nl2\nl3\n", []bs.Edit{{Line: 3, Insert: [][]byte{[]byte("n1")}}}, "l1\nl2\nl3\nn1\n", nil, ""},
		{"InsertAfterSplicedLine", "l1\nl2\n", []bs.Edit{{Line: 1, Splices: []bs.Splice{sp(0, 1, "L")}, Insert: [][]byte{[]byte("n1")}}}, "L1\nn1\nl2\n", nil, ""},
		{"InsertAfterLastWithoutNewline", "l1\nl2", []bs.Edit{{Line: 2, Insert: [][]byte{[]byte("n1"), []byte("n2")}}}, "l1\nl2\nn1\nn2", nil, ""},
		{"InsertAfterCRLFLine", "l1\r\nl2\r\n", []bs.Edit{{Line: 1, Insert: [][]byte{[]byte("n1")}}}, "l1\r\nn1\nl2\r\n", nil, ""},
		{"InsertAfterMalformedLine", "l1\n{bad\nl3\n", []bs.Edit{{Line: 2, Insert: [][]byte{[]byte("n1")}}}, "l1\n{bad\nn1\nl3\n", nil, ""},
		{"InsertIDMismatch", "{\"id\":\"e1\"}\n", []bs.Edit{{Line: 1, ID: "e2", Insert: [][]byte{[]byte("n1")}}}, "", bs.ErrChanged, "does not hold entry id"},
		{"InsertEmptyLine", "a\n", []bs.Edit{{Line: 1, Insert: [][]byte{[]byte("n1"), nil}}}, "", bs.ErrInvalid, "inserted line 2 is empty"},
		{"InsertLineWithNewline", "a\n", []bs.Edit{{Line: 1, Insert: [][]byte{[]byte("n\n1")}}}, "", bs.ErrInvalid, "holds a newline"},
		{"InsertPastEOF", "a\n", []bs.Edit{{Line: 2, Insert: [][]byte{[]byte("n1")}}}, "", bs.ErrChanged, "has only 1 lines"},
		{"RemoveFirst", "l1\nl2\nl3\n", []bs.Edit{{Line: 1, Remove: true}}, "l2\nl3\n", nil, ""},
		{"RemoveMiddle", "l1\nl2\nl3\n", []bs.Edit{{Line: 2, Remove: true}}, "l1\nl3\n", nil, ""},
		{"RemoveLast", "l1\nl2\nl3\n", []bs.Edit{{Line: 3, Remove: true}}, "l1\nl2\n", nil, ""},
		{"RemoveLastWithoutNewline", "l1\nl2\nl3", []bs.Edit{{Line: 3, Remove: true}}, "l1\nl2", nil, ""},
		{"RemoveLastTwoWithoutNewline", "l1\nn1\nn2", []bs.Edit{{Line: 2, Remove: true}, {Line: 3, Remove: true}}, "l1", nil, ""},
		{"RemoveOnlyLine", "l1", []bs.Edit{{Line: 1, Remove: true}}, "", nil, ""},
		{"RemoveAll", "l1\nl2\n", []bs.Edit{{Line: 1, Remove: true}, {Line: 2, Remove: true}}, "", nil, ""},
		{"RemoveEmptyLine", "l1\n\nl3\n", []bs.Edit{{Line: 2, Remove: true}}, "l1\nl3\n", nil, ""},
		{"RemoveWithIDAndSum", "{\"id\":\"a\"}\n{\"id\":\"b\"}\n", []bs.Edit{{Line: 2, ID: "b", Sum: bs.LineSum([]byte(`{"id":"b"}`)), Remove: true}}, "{\"id\":\"a\"}\n", nil, ""},
		{"RemoveIDMismatch", "{\"id\":\"a\"}\n", []bs.Edit{{Line: 1, ID: "b", Remove: true}}, "", bs.ErrChanged, "does not hold entry id"},
		{"RemoveSumMismatch", "{\"id\":\"a\"}\n", []bs.Edit{{Line: 1, Sum: bs.LineSum([]byte("x")), Remove: true}}, "", bs.ErrChanged, "checksum differs"},
		{"RemovePastEOF", "a\n", []bs.Edit{{Line: 2, Remove: true}}, "", bs.ErrChanged, "has only 1 lines"},
		{"RemoveAndSplice", "a\n", []bs.Edit{{Line: 1, Remove: true, Splices: []bs.Splice{sp(0, 1, "")}}}, "", bs.ErrInvalid, "removes the line and also"},
		{"RemoveAndInsert", "a\n", []bs.Edit{{Line: 1, Remove: true, Insert: [][]byte{[]byte("n")}}}, "", bs.ErrInvalid, "removes the line and also"},
		{"RemoveAndInsertOnOtherLines", "l1\nl2\nl3\nl4\n", []bs.Edit{
			{Line: 3, Remove: true},
			{Line: 1, Insert: [][]byte{[]byte("n1")}},
			{Line: 4, Splices: []bs.Splice{sp(0, 1, "L")}, Insert: [][]byte{[]byte("n4")}},
		}, "l1\nn1\nl2\nL4\nn4\n", nil, ""},
		{"RemoveThenInsertBefore", "l1\nl2", []bs.Edit{{Line: 1, Insert: [][]byte{[]byte("n1")}}, {Line: 2, Remove: true}}, "l1\nn1", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			// A one-byte reader makes every line cross buffer refills.
			for _, src := range []io.Reader{strings.NewReader(tc.in), &wtOneByteReader{s: tc.in}} {
				out.Reset()
				err := session.ApplyEdits(&out, src, tc.edits)
				if tc.err != nil {
					if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
						t.Fatalf("err = %v, want %v mentioning %q", err, tc.err, tc.msg)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if out.String() != tc.want {
					t.Fatalf("got %q, want %q", out.String(), tc.want)
				}
			}
		})
	}
}

type wtOneByteReader struct {
	s string
	i int
}

func (r *wtOneByteReader) Read(p []byte) (int, error) {
	if r.i >= len(r.s) {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.s[r.i]
	r.i++
	return 1, nil
}

// wtPattern is an io.Reader of n bytes of a repeating pattern, without
// newlines.
type wtPattern struct{ n int64 }

func (r *wtPattern) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	for i := range p {
		p[i] = 'a' + byte((r.n-int64(i))%26)
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// TestApplyEditsHugeLines streams 50 MB lines: an unedited one must not be
// held in memory, an edited one is spliced correctly.
func TestApplyEditsHugeLines(t *testing.T) {
	if testing.Short() {
		t.Skip("edits two 50 MB lines; skipped with -short")
	}
	const huge = 50 << 20
	input := func() io.Reader {
		return io.MultiReader(
			strings.NewReader("{\"id\":\"h1\",\"v\":\""), &wtPattern{huge}, strings.NewReader("\"}\n"),
			strings.NewReader("{\"id\":\"h2\",\"v\":\""), &wtPattern{huge}, strings.NewReader("\"}\n"),
			strings.NewReader("{\"id\":\"small\"}"))
	}
	sum := func(r io.Reader) [32]byte {
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			t.Fatal(err)
		}
		return [32]byte(h.Sum(nil))
	}
	t.Run("UneditedStreams", func(t *testing.T) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h := sha256.New()
		if err := session.ApplyEdits(h, input(), []bs.Edit{{Line: 3, ID: "small", Splices: []bs.Splice{{Start: 0, End: 0, With: []byte(" ")}}}}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Fatalf("allocated %d MB for unedited 50 MB lines; they must be streamed", alloc>>20)
		}
		want := sum(io.MultiReader(
			strings.NewReader("{\"id\":\"h1\",\"v\":\""), &wtPattern{huge}, strings.NewReader("\"}\n"),
			strings.NewReader("{\"id\":\"h2\",\"v\":\""), &wtPattern{huge}, strings.NewReader("\"}\n"),
			strings.NewReader(" {\"id\":\"small\"}")))
		if [32]byte(h.Sum(nil)) != want {
			t.Fatal("output differs")
		}
	})
	t.Run("EditedHugeLine", func(t *testing.T) {
		h := sha256.New()
		edit := bs.Edit{Line: 2, ID: "h2", Splices: []bs.Splice{{Start: len(`{"id":"h2","v":`), End: len(`{"id":"h2","v":`) + huge + 2, With: []byte(`"[[extracted-h2]]"`)}}}
		if err := session.ApplyEdits(h, input(), []bs.Edit{edit}); err != nil {
			t.Fatal(err)
		}
		want := sum(io.MultiReader(
			strings.NewReader("{\"id\":\"h1\",\"v\":\""), &wtPattern{huge}, strings.NewReader("\"}\n"),
			strings.NewReader("{\"id\":\"h2\",\"v\":\"[[extracted-h2]]\"}\n"),
			strings.NewReader("{\"id\":\"small\"}")))
		if [32]byte(h.Sum(nil)) != want {
			t.Fatal("output differs")
		}
	})
}

func TestWriterCheckIdle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ref *bs.SessionRef, w *session.Writer)
		err   error
		msg   string
	}{
		{"Idle", func(*testing.T, *bs.SessionRef, *session.Writer) {}, nil, ""},
		{"StatusRunning", func(_ *testing.T, ref *bs.SessionRef, _ *session.Writer) { ref.Status = "running" },
			bs.ErrBusy, "run in flight (sessions.json status running)"},
		{"LiveLockHolder", func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) {
			pid := wtLivePID(t)
			os.WriteFile(ref.Path+".lock", wtLockPayload(pid, time.Now().Add(-2*time.Second)), 0o600)
			ref.Status = "" // unknown status
		}, bs.ErrBusy, "held by live pid"},
		{"StaleLockDeadPID", func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) {
			os.WriteFile(ref.Path+".lock", wtLockPayload(wtDeadPID(t), time.Now()), 0o600)
		}, nil, ""},
		{"StaleLockTooOld", func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) {
			os.WriteFile(ref.Path+".lock", wtLockPayload(wtLivePID(t), time.Now().Add(-time.Hour)), 0o600)
		}, nil, ""},
		{"LockBeingTaken", func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) {
			os.WriteFile(ref.Path+".lock", nil, 0o600)
		}, bs.ErrBusy, "no payload yet"},
		{"RecentlyModified", func(t *testing.T, ref *bs.SessionRef, w *session.Writer) {
			fi, _ := os.Stat(ref.Path)
			w.Clock = wtClock{fi.ModTime().Add(10 * time.Second)}
		}, bs.ErrBusy, "modified 10s ago; it must be idle for 5m0s, try again in 4m50s"},
		{"CustomQuiet", func(t *testing.T, ref *bs.SessionRef, w *session.Writer) {
			fi, _ := os.Stat(ref.Path)
			w.Clock = wtClock{fi.ModTime().Add(10 * time.Second)}
			w.Quiet = 5 * time.Second
		}, nil, ""},
		{"NoQuietPeriod", func(t *testing.T, ref *bs.SessionRef, w *session.Writer) {
			fi, _ := os.Stat(ref.Path)
			w.Clock = wtClock{fi.ModTime()}
			w.Quiet = 0
		}, nil, ""},
		{"ZeroValueHasNoQuietPeriod", func(t *testing.T, ref *bs.SessionRef, w *session.Writer) {
			fi, _ := os.Stat(ref.Path)
			*w = session.Writer{Clock: wtClock{fi.ModTime()}}
		}, nil, ""},
		{"ModifiedInTheFuture", func(t *testing.T, ref *bs.SessionRef, w *session.Writer) {
			fi, _ := os.Stat(ref.Path)
			w.Clock = wtClock{fi.ModTime().Add(-time.Minute)}
		}, bs.ErrBusy, "in the future"},
		{"Missing", func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) { os.Remove(ref.Path) }, bs.ErrNotFound, "no such file"},
		{"NoPath", func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) { ref.Path = "" }, bs.ErrInvalid, "no transcript path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := wtTranscript(t, "{\"type\":\"session\"}\n")
			w := session.NewWriter()
			tc.setup(t, &ref, w)
			err := w.CheckIdle(context.Background(), ref)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.err, tc.msg)
			}
		})
	}
}

const wtSample = `{"type":"session","version":3,"id":"s1"}
{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"hello"}}
{"type":"message","id":"e2","parentId":"e1","message":{"role":"toolResult","content":[{"type":"text","text":"LONG OUTPUT"}]}}
{"type":"message","id":"e3","parentId":"e2","message":{"role":"assistant","content":"done"}}
`

func TestWriterRewrite(t *testing.T) {
	line3 := strings.Split(wtSample, "\n")[2]
	at := strings.Index(line3, `"LONG OUTPUT"`)
	good := []bs.Edit{{Line: 3, ID: "e2", Splices: []bs.Splice{{Start: at, End: at + len(`"LONG OUTPUT"`), With: []byte(`"[[extracted-e2]]"`)}}}}
	want := strings.Replace(wtSample, `"LONG OUTPUT"`, `"[[extracted-e2]]"`, 1)
	for _, tc := range []struct {
		name  string
		edits []bs.Edit
		setup func(t *testing.T, ref *bs.SessionRef, w *session.Writer) bs.Version
		want  string // "" means unchanged
		err   error
		msg   string
	}{
		{"Applies", good, nil, want, nil, ""},
		{"NoEdits", nil, nil, "", nil, ""},
		{"StaleBase", good, func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) bs.Version {
			v := wtVersion(t, ref.Path)
			f, _ := os.OpenFile(ref.Path, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString("{\"type\":\"message\",\"id\":\"e4\"}\n")
			f.Close()
			old := time.Now().Add(-time.Hour)
			os.Chtimes(ref.Path, old, old)
			return v
		}, "", bs.ErrChanged, "fingerprint is"},
		{"WrongID", []bs.Edit{{Line: 3, ID: "e3", Splices: good[0].Splices}}, nil, "", bs.ErrChanged, "does not hold entry id"},
		{"PastEOF", []bs.Edit{{Line: 9, ID: "e9"}}, nil, "", bs.ErrChanged, "has only 4 lines"},
		{"InvalidEdits", []bs.Edit{{Line: 3, Splices: []bs.Splice{{Start: 5, End: 9}, {Start: 6, End: 7}}}}, func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) bs.Version {
			ref.Status = "running" // validation comes first
			return wtVersion(t, ref.Path)
		}, "", bs.ErrInvalid, "overlaps"},
		{"SplicePastLine", []bs.Edit{{Line: 2, Splices: []bs.Splice{{Start: 80, End: 300}}}}, nil, "", bs.ErrInvalid, "past the end of the line"},
		{"Running", good, func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) bs.Version {
			ref.Status = "running"
			return wtVersion(t, ref.Path)
		}, "", bs.ErrBusy, "run in flight"},
		{"LiveLockHolder", good, func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) bs.Version {
			os.WriteFile(ref.Path+".lock", wtLockPayload(wtLivePID(t), time.Now()), 0o600)
			return wtVersion(t, ref.Path)
		}, "", bs.ErrBusy, "held by live pid"},
		{"StaleLockTakenOver", good, func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) bs.Version {
			os.WriteFile(ref.Path+".lock", wtLockPayload(wtDeadPID(t), time.Now()), 0o600)
			return wtVersion(t, ref.Path)
		}, want, nil, ""},
		{"RecentlyModified", good, func(t *testing.T, ref *bs.SessionRef, _ *session.Writer) bs.Version {
			now := time.Now()
			os.Chtimes(ref.Path, now, now)
			return wtVersion(t, ref.Path)
		}, "", bs.ErrBusy, "must be idle for 5m0s"},
		{"RunStartedUnderLock", good, func(t *testing.T, ref *bs.SessionRef, w *session.Writer) bs.Version {
			w.Refresh = func(_ context.Context, r bs.SessionRef) (bs.SessionRef, error) {
				if b, err := os.ReadFile(r.Path + ".lock"); err != nil || !bytes.Contains(b, []byte(strconv.Itoa(os.Getpid()))) {
					t.Errorf("Refresh called without our lock held: %q %v", b, err)
				}
				r.Status = "running"
				return r, nil
			}
			return wtVersion(t, ref.Path)
		}, "", bs.ErrBusy, "seen under the lock"},
		{"RefreshFails", good, func(t *testing.T, ref *bs.SessionRef, w *session.Writer) bs.Version {
			w.Refresh = func(context.Context, bs.SessionRef) (bs.SessionRef, error) {
				return bs.SessionRef{}, fmt.Errorf("sessions.json: %w", bs.ErrNotFound)
			}
			return wtVersion(t, ref.Path)
		}, "", bs.ErrNotFound, "refresh status under the lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := wtTranscript(t, wtSample)
			w := &session.Writer{Quiet: session.DefaultQuiet, LockTimeout: 100 * time.Millisecond}
			base := wtVersion(t, ref.Path)
			if tc.setup != nil {
				base = tc.setup(t, &ref, w)
			}
			before, err := os.ReadFile(ref.Path)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Rewrite(context.Background(), ref, base, tc.edits)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want %v mentioning %q", err, tc.err, tc.msg)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(ref.Path)
			if tc.want == "" {
				if !bytes.Equal(got, before) {
					t.Fatalf("transcript changed:\n%s", got)
				}
			} else if string(got) != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			if tmp := wtTempFiles(t, filepath.Dir(ref.Path)); len(tmp) != 0 {
				t.Fatalf("temp files left: %v", tmp)
			}
			if tc.msg != "held by live pid" && wtExists(ref.Path+".lock") {
				t.Fatal("lock left behind")
			}
		})
	}
}

func TestWriterAppend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		entries []string
		setup   func(t *testing.T, ref *bs.SessionRef)
		want    string
		err     error
		msg     string
	}{
		{"Appends", "{\"a\":1}\n", []string{`{"b":2}`, `{"c":3}`}, nil, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n", nil, ""},
		{"AddsMissingNewline", "{\"a\":1}", []string{`{"b":2}`}, nil, "{\"a\":1}\n{\"b\":2}\n", nil, ""},
		{"RefusesNewlineInEntry", "{\"a\":1}\n", []string{"{\"b\":\n2}"}, nil, "", bs.ErrInvalid, "contains a newline"},
		{"RefusesEmptyEntry", "{\"a\":1}\n", []string{""}, nil, "", bs.ErrInvalid, "is empty"},
		{"MissingFile", "{\"a\":1}\n", []string{`{"b":2}`}, func(t *testing.T, ref *bs.SessionRef) { os.Remove(ref.Path) },
			"", bs.ErrNotFound, "no such file"},
		{"BusyLock", "{\"a\":1}\n", []string{`{"b":2}`}, func(t *testing.T, ref *bs.SessionRef) {
			os.WriteFile(ref.Path+".lock", wtLockPayload(wtLivePID(t), time.Now()), 0o600)
		}, "", bs.ErrBusy, "held by live pid"},
		{"Running", "{\"a\":1}\n", []string{`{"b":2}`}, func(t *testing.T, ref *bs.SessionRef) { ref.Status = "running" },
			"", bs.ErrBusy, "run in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := wtTranscript(t, tc.content)
			if tc.setup != nil {
				tc.setup(t, &ref)
			}
			var entries [][]byte
			for _, e := range tc.entries {
				entries = append(entries, []byte(e))
			}
			err := (&session.Writer{LockTimeout: 100 * time.Millisecond}).Append(context.Background(), ref, entries)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want %v mentioning %q", err, tc.err, tc.msg)
				}
				if tc.err == bs.ErrNotFound {
					if wtExists(ref.Path) {
						t.Fatal("Append created the missing transcript")
					}
					return
				}
				tc.want = tc.content
			} else if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(ref.Path); string(got) != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWriterAppendAt(t *testing.T) {
	ctx := context.Background()
	w := &session.Writer{LockTimeout: 100 * time.Millisecond}
	ref := wtTranscript(t, "{\"a\":1}\n")
	st, err := hostfile.Fingerprint(ref.Path)
	if err != nil {
		t.Fatal(err)
	}
	base := st.Version()
	// Another writer appends after the read: the append at base is refused.
	f, err := os.OpenFile(ref.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"host\":2}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = w.AppendAt(ctx, ref, base, [][]byte{[]byte(`{"ours":3}`)})
	if !errors.Is(err, bs.ErrChanged) || !strings.Contains(err.Error(), "no longer the version that was read") {
		t.Fatalf("AppendAt at a stale version: err = %v, want ErrChanged", err)
	}
	if got, _ := os.ReadFile(ref.Path); string(got) != "{\"a\":1}\n{\"host\":2}\n" {
		t.Fatalf("AppendAt at a stale version wrote: %q", got)
	}
	// At the current version it appends.
	st, err = hostfile.Fingerprint(ref.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AppendAt(ctx, ref, st.Version(), [][]byte{[]byte(`{"ours":3}`)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(ref.Path); string(got) != "{\"a\":1}\n{\"host\":2}\n{\"ours\":3}\n" {
		t.Fatalf("AppendAt wrote %q", got)
	}
	// A version that is not a file's is refused before anything is locked.
	if err := w.AppendAt(ctx, ref, bs.Version{}, [][]byte{[]byte(`{"x":1}`)}); !errors.Is(err, bs.ErrInvalid) {
		t.Fatalf("AppendAt at the zero version: err = %v, want ErrInvalid", err)
	}
	// A busy session is refused as Append refuses it.
	busy := ref
	busy.Status = "running"
	st, _ = hostfile.Fingerprint(ref.Path)
	if err := w.AppendAt(ctx, busy, st.Version(), [][]byte{[]byte(`{"x":1}`)}); !errors.Is(err, bs.ErrBusy) {
		t.Fatalf("AppendAt on a running session: err = %v, want ErrBusy", err)
	}
}

func TestWriterExplicitWriteSkipsQuietOnly(t *testing.T) {
	ctx := context.Background()
	w := &session.Writer{Quiet: session.DefaultQuiet, LockTimeout: 100 * time.Millisecond}
	ref := wtTranscript(t, "{\"a\":1}\n")
	if now := time.Now(); os.Chtimes(ref.Path, now, now) != nil { // just written: inside the quiet period
		t.Fatal("chtimes")
	}
	if err := w.CheckIdle(ctx, ref); !errors.Is(err, bs.ErrBusy) || !strings.Contains(err.Error(), "must be idle") {
		t.Fatalf("CheckIdle of a fresh transcript: err = %v, want the quiet period", err)
	}
	ex := bs.ExplicitWrite(ctx)
	if err := w.CheckIdle(ex, ref); err != nil {
		t.Fatalf("CheckIdle of an explicit write: %v", err)
	}
	if err := w.Append(ex, ref, [][]byte{[]byte(`{"b":2}`)}); err != nil {
		t.Fatalf("explicit Append inside the quiet period: %v", err)
	}
	running := ref
	running.Status = "running"
	if err := w.CheckIdle(ex, running); !errors.Is(err, bs.ErrBusy) {
		t.Fatalf("explicit CheckIdle of a running session: err = %v, want ErrBusy", err)
	}
	if err := w.Append(ex, running, [][]byte{[]byte(`{"c":3}`)}); !errors.Is(err, bs.ErrBusy) {
		t.Fatalf("explicit Append to a running session: err = %v, want ErrBusy", err)
	}
	if got, _ := os.ReadFile(ref.Path); string(got) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("transcript %q", got)
	}
}

// wtAppendLoop is the lock-ignoring appender of
// TestWriterConcurrentAppender: n entries, each one open(O_APPEND), one
// write of one line, close, in bursts with short pauses so that rewrites
// both find quiet moments and overlap appends.
func wtAppendLoop(path string, n int) error {
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	pad := strings.Repeat("p", 60)
	for seq := 1; seq <= n; seq++ {
		line := fmt.Appendf(nil, `{"type":"message","id":"app-%05d","seq":%d,"message":{"role":"assistant","content":"%s"}}`+"\n", seq, seq, pad)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := f.Write(line); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if rng.IntN(5) == 0 {
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
	}
	return nil
}

// wtCountLogger counts log records by message.
type wtCountLogger struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *wtCountLogger) add(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[msg]++
}
func (l *wtCountLogger) Debug(m string, _ ...any) { l.add(m) }
func (l *wtCountLogger) Info(m string, _ ...any)  { l.add(m) }
func (l *wtCountLogger) Warn(m string, _ ...any)  { l.add("WARN " + m) }
func (l *wtCountLogger) Error(m string, _ ...any) { l.add("ERROR " + m) }

// TestWriterConcurrentAppender runs rewrites in a loop while a child
// process appends 10,000 entries without taking any lock (the worst case:
// a newer OpenClaw treats our lock as stale, other tools ignore it). Each
// rewrite splices a counter in one of the first lines. At the end every
// appended entry must be present exactly once and intact, and every
// counter must hold the value of the last rewrite that set it.
func TestWriterConcurrentAppender(t *testing.T) {
	if testing.Short() {
		t.Skip("races 10,000 appends from another process against rewrites; skipped with -short")
	}
	const appends = 10000
	const baseLines = 100
	dir := t.TempDir()
	path := filepath.Join(dir, "c1.jsonl")
	var init bytes.Buffer
	init.WriteString(`{"type":"session","version":3,"id":"c1"}` + "\n")
	const counterKey = `"counter":"`
	for i := 1; i <= baseLines; i++ {
		fmt.Fprintf(&init, `{"type":"message","id":"base-%04d","counter":"%08d","message":{"role":"user","content":"%s"}}`+"\n",
			i, 0, strings.Repeat("b", 200))
	}
	if err := os.WriteFile(path, init.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	firstBase := strings.Split(init.String(), "\n")[1]
	counterAt := strings.Index(firstBase, counterKey) + len(counterKey)

	ref := bs.SessionRef{Agent: "main", ID: "c1", Path: path}
	log := &wtCountLogger{}
	w := &session.Writer{Logger: log}
	expect := make([]int, baseLines+1) // counter value per base line

	cmd := wtHelper("append", "BS_FILE="+path, "BS_COUNT="+strconv.Itoa(appends))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var ok, changed, busy int
	rewrite := func(iter int) error {
		base, err := wtStatVersion(path)
		if err != nil {
			return err
		}
		n := 1 + iter%baseLines
		edit := bs.Edit{Line: n + 1, ID: fmt.Sprintf("base-%04d", n), Splices: []bs.Splice{
			{Start: counterAt, End: counterAt + 8, With: fmt.Appendf(nil, "%08d", iter)},
		}}
		err = w.Rewrite(context.Background(), ref, base, []bs.Edit{edit})
		switch {
		case err == nil:
			ok++
			expect[n] = iter
		case errors.Is(err, bs.ErrChanged):
			changed++
		case errors.Is(err, bs.ErrBusy):
			busy++
		default:
			return err
		}
		return nil
	}
	start := time.Now()
	iter := 1
	for running := true; running; iter++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("appender failed: %v\n%s", err, stderr.String())
			}
			running = false
		default:
		}
		if err := rewrite(iter); err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
	}
	// One more rewrite once the appender is gone, so the file ends in a
	// state written by us.
	for before := ok; ok == before; iter++ {
		if err := rewrite(iter); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		t.Fatal("transcript does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if want := 1 + baseLines + appends; len(lines) != want {
		t.Errorf("%d lines, want %d", len(lines), want)
	}
	seen := make([]int, appends+1)
	damaged := 0
	for i, l := range lines {
		var e struct {
			ID      string `json:"id"`
			Seq     int    `json:"seq"`
			Counter string `json:"counter"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			damaged++
			if damaged < 5 {
				t.Errorf("line %d damaged: %v: %.120q", i+1, err, l)
			}
			continue
		}
		switch {
		case strings.HasPrefix(e.ID, "app-"):
			if e.Seq < 1 || e.Seq > appends || e.ID != fmt.Sprintf("app-%05d", e.Seq) {
				t.Errorf("line %d: bad appended entry %.120q", i+1, l)
				continue
			}
			seen[e.Seq]++
		case strings.HasPrefix(e.ID, "base-"):
			n, _ := strconv.Atoi(strings.TrimPrefix(e.ID, "base-"))
			if i != n {
				t.Errorf("line %d holds %s: base lines moved", i+1, e.ID)
			}
			if want := fmt.Sprintf("%08d", expect[n]); e.Counter != want {
				t.Errorf("%s: counter %s, want %s (a rewrite was lost)", e.ID, e.Counter, want)
			}
		}
	}
	lost, dup := 0, 0
	for s := 1; s <= appends; s++ {
		switch {
		case seen[s] == 0:
			lost++
		case seen[s] > 1:
			dup++
		}
	}
	log.mu.Lock()
	carried := log.n["carried over bytes appended by a writer ignoring the lock"]
	late := log.n["carried over bytes appended to the old file after the rename"]
	warns := 0
	for m, c := range log.n {
		if strings.HasPrefix(m, "WARN") || strings.HasPrefix(m, "ERROR") {
			warns += c
			t.Logf("%s: %d", m, c)
		}
	}
	log.mu.Unlock()
	t.Logf("%s: %d rewrites ok, %d ErrChanged, %d ErrBusy; carry-over before rename %d times, after rename %d times; lost %d, duplicated %d, damaged %d",
		elapsed.Round(time.Millisecond), ok, changed, busy, carried, late, lost, dup, damaged)
	if lost != 0 || dup != 0 || damaged != 0 {
		t.Fatalf("lost %d, duplicated %d, damaged %d appended entries", lost, dup, damaged)
	}
	if ok < 20 {
		t.Fatalf("only %d rewrites succeeded while appending; the test did not exercise concurrency", ok)
	}
	if carried == 0 {
		t.Fatalf("no rewrite overlapped an append (no carry-over); the test did not exercise the race")
	}
}

// TestApplyEditsInsertRemoveRoundTrip inserts lines after every line of
// several inputs, then removes them again: the input comes back byte for
// byte, with or without a final newline.
func TestApplyEditsInsertRemoveRoundTrip(t *testing.T) {
	for _, in := range []string{"a\n", "a", "a\nb\nc\n", "a\nb\nc", "a\r\n\nb\r\n", "{bad\n{\"id\":\"x\"}"} {
		n := strings.Count(in, "\n")
		if !strings.HasSuffix(in, "\n") {
			n++
		}
		for anchor := 1; anchor <= n; anchor++ {
			for k := 1; k <= 2; k++ {
				ins := make([][]byte, k)
				for i := range ins {
					ins[i] = []byte(fmt.Sprintf(`{"id":"n%d"}`, i))
				}
				var mid, back bytes.Buffer
				if err := session.ApplyEdits(&mid, strings.NewReader(in), []bs.Edit{{Line: anchor, Insert: ins}}); err != nil {
					t.Fatal(err)
				}
				var rm []bs.Edit
				for i := range k {
					rm = append(rm, bs.Edit{Line: anchor + 1 + i, ID: fmt.Sprintf("n%d", i), Sum: bs.LineSum(ins[i]), Remove: true})
				}
				if err := session.ApplyEdits(&back, bytes.NewReader(mid.Bytes()), rm); err != nil {
					t.Fatalf("%q: insert %d after line %d gave %q; removing: %v", in, k, anchor, mid.String(), err)
				}
				if back.String() != in {
					t.Fatalf("%q: insert %d after line %d gave %q, removing gave %q", in, k, anchor, mid.String(), back.String())
				}
			}
		}
	}
}

// TestStoreRewriteStructural inserts an entry through the JSONL store under
// the full write protocol, re-parenting the next entry to it, and checks
// that pi loads the result with the new entry on the active path; then
// removes it again, giving back the original bytes.
func TestStoreRewriteStructural(t *testing.T) {
	ctx := bs.ExplicitWrite(context.Background())
	const orig = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1767225601000}}
{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"timestamp":1767225602000}}
{"type":"message","id":"e3","parentId":"e2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"again","timestamp":1767225603000}}
`
	ref := wtTranscript(t, orig)
	st := session.NewStore(filepath.Dir(ref.Path))
	newLine := []byte(`{"type":"message","id":"abcd0001","parentId":"e2","timestamp":"2026-01-01T00:00:02.500Z","message":{"role":"user","content":"inserted","timestamp":1767225602500}}`)
	line4 := strings.Split(orig, "\n")[3]
	at := strings.Index(line4, `"e2"`)
	edits := []bs.Edit{
		{Line: 3, ID: "e2", Insert: [][]byte{newLine}},
		{Line: 4, ID: "e3", Sum: bs.LineSum([]byte(line4)), Splices: []bs.Splice{{Start: at, End: at + 4, With: []byte(`"abcd0001"`)}}},
	}
	if err := st.Rewrite(ctx, ref, wtVersion(t, ref.Path), edits, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(ref.Path)
	lines := strings.Split(string(got), "\n")
	if len(lines) != 6 || lines[3] != string(newLine) || !strings.Contains(lines[4], `"parentId":"abcd0001"`) || lines[5] != "" {
		t.Fatalf("after the insert:\n%s", got)
	}
	if oracle.Optional(t) {
		c, err := oracle.Context(context.Background(), ref.Path)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, m := range c.Messages {
			var v struct {
				Content json.RawMessage `json:"content"`
			}
			json.Unmarshal(m, &v)
			texts = append(texts, string(v.Content))
		}
		if len(texts) != 4 || texts[2] != `"inserted"` || texts[3] != `"again"` {
			t.Fatalf("pi's context after the insert: %q", texts)
		}
	}
	undo := []bs.Edit{
		{Line: 4, ID: "abcd0001", Sum: bs.LineSum(newLine), Remove: true},
		{Line: 5, ID: "e3", Splices: []bs.Splice{{Start: at, End: at + len(`"abcd0001"`), With: []byte(`"e2"`)}}},
	}
	if err := st.Rewrite(ctx, ref, wtVersion(t, ref.Path), undo, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(ref.Path); string(got) != orig {
		t.Fatalf("after the removal:\n%s\nwant\n%s", got, orig)
	}
	// A stale removal (the line is not the inserted one any more) changes
	// nothing.
	err := st.Rewrite(ctx, ref, wtVersion(t, ref.Path), []bs.Edit{{Line: 4, ID: "abcd0001", Remove: true}}, nil)
	if !errors.Is(err, bs.ErrChanged) {
		t.Fatalf("removing a line without the id: %v, want ErrChanged", err)
	}
	if got, _ := os.ReadFile(ref.Path); string(got) != orig {
		t.Fatalf("a refused removal changed the file:\n%s", got)
	}
}
