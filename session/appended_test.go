package session_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// tb is what the helpers of these tests need of a *testing.T or a
// *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// appendHeader is the first line of the transcripts of these tests.
const appendHeader = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work"}`

// appendMessage returns a message entry line (without "\n").
func appendMessage(id, parent, text string) string {
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"` + text + `"}]}}`
}

// freshLines opens the transcript at path afresh and returns its version
// and every line fully parsed, each the caller's to keep.
func freshLines(t tb, path string) (bs.Version, []*bs.Entry, bool) {
	t.Helper()
	ctx := context.Background()
	tr, err := session.Open(ctx, path, bs.SessionRef{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []*bs.Entry
	for e, err := range tr.Entries(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry.Parse(bytes.Clone(e.Raw), e.Line, e.Offset))
	}
	if len(out) != len(tr.Nodes()) {
		t.Fatalf("Entries gave %d lines, the index %d", len(out), len(tr.Nodes()))
	}
	return tr.Version(), out, tr.Terminated()
}

// sameLines fails t unless got is want line by line, byte for byte and
// parsed alike.
func sameLines(t tb, got, want []*bs.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d lines, a fresh Open reads %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, w := got[i], want[i]
			t.Fatalf("line %d: got line %d at %d, %s %q, raw %q; a fresh Open reads line %d at %d, %s %q, raw %q (or they parse apart)",
				i+1, g.Line, g.Offset, g.Kind, g.ID, g.Raw, w.Line, w.Offset, w.Kind, w.ID, w.Raw)
		}
	}
}

func writeFile(t tb, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t tb, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// bumpMtime sets the file's modification time one second later, so that a
// write in place is seen whatever the file system's timestamp granularity.
func bumpMtime(t tb, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	mt := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func TestReadAppended(t *testing.T) {
	m1, m2, m3 := appendMessage("a1", "", "one"), appendMessage("a2", "a1", "two"), appendMessage("a3", "a2", "three")
	start := appendHeader + "\n" + m1 + "\n"
	for _, tt := range []struct {
		name  string
		start string
		// change changes the file after base was read.
		change func(t *testing.T, path string)
		// lines are the raw lines ReadAppended must return; partial is
		// the pending part that it must leave.
		lines   []string
		partial string
		err     error
	}{
		{name: "nothing", start: start, change: func(*testing.T, string) {}},
		{name: "one line", start: start, change: func(t *testing.T, p string) { appendFile(t, p, m2+"\n") },
			lines: []string{m2}},
		{name: "blank, CRLF and malformed lines", start: start,
			change: func(t *testing.T, p string) { appendFile(t, p, "\n"+m2+"\r\n"+"{not json\n"+"\r\n"+m3+"\n") },
			lines:  []string{"", m2 + "\r", "{not json", "\r", m3}},
		{name: "a partial line only", start: start, change: func(t *testing.T, p string) { appendFile(t, p, m2[:10]) },
			partial: m2[:10]},
		{name: "a line and a partial line", start: start,
			change: func(t *testing.T, p string) { appendFile(t, p, m2+"\n"+m3[:20]) },
			lines:  []string{m2}, partial: m3[:20]},
		{name: "a CR at the end is not a line end", start: start,
			change: func(t *testing.T, p string) { appendFile(t, p, m2+"\r") }, partial: m2 + "\r"},
		{name: "base's partial line unchanged", start: start + m2[:15], change: func(*testing.T, string) {}},
		{name: "base's partial line completed", start: start + m2[:15],
			change: func(t *testing.T, p string) { appendFile(t, p, m2[15:]+"\n") }, err: bs.ErrChanged},
		{name: "truncated", start: start, change: func(t *testing.T, p string) { writeFile(t, p, appendHeader+"\n") },
			err: bs.ErrChanged},
		{name: "written in place to the same size", start: start,
			change: func(t *testing.T, p string) {
				writeFile(t, p, strings.Replace(start, "one", "two", 1))
				bumpMtime(t, p)
			}, err: bs.ErrChanged},
		{name: "replaced by a longer file", start: start,
			change: func(t *testing.T, p string) {
				writeFile(t, p+".tmp", start+m2+"\n")
				if err := os.Rename(p+".tmp", p); err != nil {
					t.Fatal(err)
				}
			}, err: bs.ErrChanged},
		{name: "renamed away", start: start,
			change: func(t *testing.T, p string) {
				if err := os.Rename(p, p+".bak"); err != nil {
					t.Fatal(err)
				}
			}, err: bs.ErrChanged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p := filepath.Join(t.TempDir(), "s1.jsonl")
			writeFile(t, p, tt.start)
			base, before, _ := freshLines(t, p)
			tt.change(t, p)
			st := session.NewStore(filepath.Dir(p))
			got, v, err := bs.ReadAppended(ctx, st, bs.SessionRef{Path: p}, base, len(before))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want one wrapping %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var raws []string
			for _, e := range got {
				raws = append(raws, string(e.Raw))
			}
			if !reflect.DeepEqual(raws, tt.lines) {
				t.Fatalf("appended %q, want %q", raws, tt.lines)
			}
			fv, fresh, _ := freshLines(t, p)
			all := append(before[:len(before):len(before)], got...)
			if tt.partial == "" {
				sameLines(t, all, fresh)
				if !v.Equal(fv) {
					t.Fatalf("version %s, a fresh Open's %s", v, fv)
				}
			} else {
				sameLines(t, all, fresh[:len(fresh)-1])
				if last := fresh[len(fresh)-1]; string(last.Raw) != tt.partial {
					t.Fatalf("fresh Open's last line %q, want the partial %q", last.Raw, tt.partial)
				}
				if v.Size() != fv.Size()-int64(len(tt.partial)) {
					t.Fatalf("version size %d, want %d (the file's %d without the partial line)", v.Size(), fv.Size()-int64(len(tt.partial)), fv.Size())
				}
			}
			if len(got) == 0 && !v.Equal(base) {
				t.Fatalf("nothing appended, version %s, want base %s", v, base)
			}
			// The version returned is a base for the next call: nothing more.
			again, v2, err := st.ReadAppended(ctx, bs.SessionRef{Path: p}, v, len(all))
			if err != nil || len(again) != 0 || !v2.Equal(v) {
				t.Fatalf("second read: %d entries, version %s, error %v; want none, %s, nil", len(again), v2, err, v)
			}
		})
	}
}

func TestReadAppendedInvalid(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "s1.jsonl")
	writeFile(t, p, appendHeader+"\n")
	base, _, _ := freshLines(t, p)
	st := session.NewStore(filepath.Dir(p))
	for _, tt := range []struct {
		name  string
		ref   bs.SessionRef
		base  bs.Version
		lines int
	}{
		{"zero version", bs.SessionRef{Path: p}, bs.Version{}, 1},
		{"a SQLite version", bs.SessionRef{Path: p}, bs.NewVersion(bs.BackendSQLite, `session="s1";generation=null;maxseq=0;rows=1;transcript_updated_at=1`, 90), 1},
		{"a JSONL version of another size", bs.SessionRef{Path: p}, bs.NewVersion(bs.BackendJSONL, base.Token(), base.Size()+1), 1},
		{"no path", bs.SessionRef{}, base, 1},
		{"a SQLite ref", bs.SessionRef{Path: p, Backend: bs.BackendSQLite}, base, 1},
		{"negative lines", bs.SessionRef{Path: p}, base, -1},
		{"no lines in a non-empty base", bs.SessionRef{Path: p}, base, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := st.ReadAppended(ctx, tt.ref, tt.base, tt.lines)
			if !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("error %v, want one wrapping ErrInvalid", err)
			}
		})
	}
}

// TestReadAppendedProperty appends random lines (entries, blank, CRLF,
// malformed, in pieces) and makes random changes a reader must notice:
// the lines read so far plus what ReadAppended returns are always a fresh
// Open's lines, byte for byte, and with no partial line pending the
// versions are equal.
func TestReadAppendedProperty(t *testing.T) {
	dir := t.TempDir()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		n++
		p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", n))
		st := session.NewStore(dir)
		ref := bs.SessionRef{Path: p}
		lineGen := rapid.OneOf(
			rapid.Map(rapid.StringMatching(`[a-z ]{0,40}`), func(s string) string {
				return appendMessage(fmt.Sprintf("m%d", len(s)), "x", s)
			}),
			rapid.Just(""),
			rapid.Just("\r"),
			rapid.Map(rapid.StringMatching(`[a-z{}":,]{1,20}`), func(s string) string { return s }),
			rapid.Map(rapid.StringMatching(`[a-z]{0,10}`), func(s string) string { return appendMessage("c", "x", s) + "\r" }),
		)
		content := appendHeader + "\n"
		writeFile(rt, p, content)
		base, have, _ := freshLines(rt, p)
		pending := ""
		for step := range rapid.IntRange(1, 25).Draw(rt, "steps") {
			switch rapid.IntRange(0, 9).Draw(rt, fmt.Sprintf("action%d", step)) {
			case 0, 1, 2, 3: // whole lines, the pending part first
				var b strings.Builder
				b.WriteString(pending)
				pending = ""
				for range rapid.IntRange(1, 4).Draw(rt, "count") {
					b.WriteString(lineGen.Draw(rt, "line"))
					b.WriteByte('\n')
				}
				appendFile(rt, p, b.String())
			case 4, 5: // a piece of a line
				s := lineGen.Draw(rt, "line")
				s = s[:rapid.IntRange(0, len(s)).Draw(rt, "cut")]
				if s == "" {
					s = "{"
				}
				pending += s
				appendFile(rt, p, s)
			case 6: // a change to notice
				b, err := os.ReadFile(p)
				if err != nil {
					rt.Fatal(err)
				}
				var changed string
				kind := rapid.IntRange(0, 2).Draw(rt, "change")
				if kind == 2 && int64(len(b)) != base.Size() {
					kind = 0 // in place to base's size only: beyond it, the new bytes may be anything
				}
				switch kind {
				case 0: // truncated below base
					changed = string(b[:rapid.IntRange(0, int(base.Size())-1).Draw(rt, "size")])
					writeFile(rt, p, changed)
				case 1: // rewritten and renamed over the old file
					changed = string(b) + appendMessage("r", "x", "rewritten") + "\n"
					writeFile(rt, p+".tmp", changed)
					if err := os.Rename(p+".tmp", p); err != nil {
						rt.Fatal(err)
					}
				case 2: // written in place to the same size
					changed = string(bytes.Replace(b, []byte(`"s1"`), []byte(`"s2"`), 1))
					writeFile(rt, p, changed)
					bumpMtime(rt, p)
				}
				if _, _, err := st.ReadAppended(ctx, ref, base, len(have)); !errors.Is(err, bs.ErrChanged) {
					rt.Fatalf("after a change: error %v, want one wrapping ErrChanged", err)
				}
				// Start again from a whole file.
				writeFile(rt, p, appendHeader+"\n"+appendMessage("z", "x", "again")+"\n")
				pending = ""
				base, have, _ = freshLines(rt, p)
				continue
			default: // just read
			}
			got, v, err := st.ReadAppended(ctx, ref, base, len(have))
			if err != nil {
				rt.Fatalf("step %d: %v", step, err)
			}
			for i, e := range got {
				if e.Line != len(have)+i+1 {
					rt.Fatalf("appended entry %d has line %d, want %d", i, e.Line, len(have)+i+1)
				}
			}
			have = append(have, got...)
			base = v
			fv, fresh, terminated := freshLines(rt, p)
			if pending == "" {
				if !terminated {
					rt.Fatalf("no partial line expected but the file does not end in \"\\n\"")
				}
				sameLines(rt, have, fresh)
				if !v.Equal(fv) {
					rt.Fatalf("version %s, a fresh Open's %s", v, fv)
				}
			} else {
				sameLines(rt, have, fresh[:len(fresh)-1])
				if string(fresh[len(fresh)-1].Raw) != pending {
					rt.Fatalf("pending %q, the file's last line %q", pending, fresh[len(fresh)-1].Raw)
				}
				if v.Size() != fv.Size()-int64(len(pending)) {
					rt.Fatalf("version size %d with %d bytes pending in %d", v.Size(), len(pending), fv.Size())
				}
			}
		}
	})
}

// benchTurn returns the four lines of turn k (a question, a tool call with
// 700 bytes of thinking, a result of 2,000 bytes and an answer), each
// ending in "\n".
func benchTurn(k int) string {
	id := func(r string) string { return fmt.Sprintf("t%d%s", k, r) }
	prev := fmt.Sprintf("t%da", k-1)
	return appendMessage(id("u"), prev, fmt.Sprintf("question %d", k)) + "\n" +
		appendMessage(id("c"), id("u"), strings.Repeat("thinking ", 78)) + "\n" +
		appendMessage(id("r"), id("c"), strings.Repeat("tool output ", 167)) + "\n" +
		appendMessage(id("a"), id("r"), fmt.Sprintf("answer %d", k)) + "\n"
}

// BenchmarkReadAppended reads one turn (4 lines) appended after a
// transcript of 1k and of 64k lines: the cost must not grow with the
// transcript.
func BenchmarkReadAppended(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1 << 10, 64 << 10} {
		p := filepath.Join(b.TempDir(), "s1.jsonl")
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString(appendHeader + "\n")
		for k := range n/4 - 1 {
			w.WriteString(benchTurn(k))
		}
		for k := range 3 { // n lines in all
			w.WriteString(appendMessage(fmt.Sprintf("f%d", k), "x", "filler") + "\n")
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		tr, err := session.Open(ctx, p, bs.SessionRef{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		base, lines := tr.Version(), len(tr.Nodes())
		if lines != n {
			b.Fatalf("%d lines, want %d", lines, n)
		}
		appendFile(b, p, benchTurn(n/4))
		st := session.NewStore(filepath.Dir(p))
		ref := bs.SessionRef{Path: p}
		b.Run(fmt.Sprintf("%dk", n>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, _, err := st.ReadAppended(ctx, ref, base, lines)
				if err != nil || len(got) != 4 {
					b.Fatalf("%d entries, error %v; want 4", len(got), err)
				}
			}
		})
	}
}
