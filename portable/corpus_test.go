package portable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/portable"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// corpusTranscripts opens every v2/v3 corpus transcript (v1 files have no
// entry ids to branch at or export from).
func corpusTranscripts(t *testing.T) map[string]*session.Transcript {
	t.Helper()
	out := map[string]*session.Transcript{}
	for _, p := range testcorpus.Transcripts(t) {
		tr, err := session.Open(context.Background(), p, bs.SessionRef{Agent: "main"}, nil)
		if err != nil {
			t.Fatalf("%s: %v", testcorpus.Name(p), err)
		}
		// The flat entry shape ({"__id":…}, no message entries) has no messages pi would load.
		if tr.Header().Version >= 2 && len(tr.ActivePath()) > 0 && tr.Context().Count() > 0 {
			out[p] = tr
		}
	}
	var files []string
	for p := range out {
		files = append(files, p)
	}
	if want := map[bool]int{true: 10, false: 5}[testcorpus.HasReal(files)]; len(out) < want {
		t.Fatalf("only %d v2/v3 corpus transcripts, want at least %d", len(out), want)
	}
	return out
}

// upTo writes the first lines of src, up to and including line, into a
// temp file: the source as the host sees it with that line as its leaf.
func upTo(t *testing.T, src string, line int) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	end := 0
	for n := 0; n < line; n++ {
		i := bytes.IndexByte(b[end:], '\n')
		if i < 0 {
			end = len(b)
			break
		}
		end += i + 1
	}
	p := filepath.Join(t.TempDir(), "orig.jsonl")
	if err := os.WriteFile(p, b[:end], 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeSession(t *testing.T, s *portable.NewSession) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), s.ID+".jsonl")
	if err := os.WriteFile(p, append(bytes.Join(s.Lines, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// piContext returns the context pi builds from file: from the pi oracle
// when it is installed, else from this module's own reading of the file
// (ownContext), so that the round trips are checked everywhere and against
// the host where it can run.
func piContext(t *testing.T, file string) oracle.PiContext {
	t.Helper()
	if oracle.Available() != nil {
		return ownContext(t, file)
	}
	c, err := oracle.Context(context.Background(), file)
	if err != nil {
		t.Fatalf("oracle context of %s: %v", file, err)
	}
	return c
}

// ownContext returns the context session.Open builds from file, shaped
// like the oracle's: the compaction summary first (role
// compactionSummary), then each message's "message" value as it is stored
// (a custom_message's "content").
func ownContext(t *testing.T, file string) oracle.PiContext {
	t.Helper()
	ctx := context.Background()
	tr, err := session.Open(ctx, file, bs.SessionRef{}, nil)
	if err != nil {
		t.Fatalf("context of %s: %v", file, err)
	}
	var out oracle.PiContext
	c := tr.Context()
	raw := func(i int) map[string]json.RawMessage {
		e, err := tr.Entry(ctx, tr.Nodes()[i].Line)
		if err != nil {
			t.Fatalf("%s line %d: %v", file, tr.Nodes()[i].Line, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(e.Raw, &m); err != nil {
			t.Fatalf("%s line %d: %v", file, tr.Nodes()[i].Line, err)
		}
		return m
	}
	if c.Compaction >= 0 {
		out.Messages = append(out.Messages, json.RawMessage(`{"role":"compactionSummary","summary":`+string(raw(c.Compaction)["summary"])+`}`))
	}
	for _, i := range c.Messages {
		m := raw(i)
		msg, ok := m["message"]
		if !ok {
			msg = m["content"]
		}
		out.Messages = append(out.Messages, msg)
	}
	return out
}

func sameMessages(t *testing.T, what string, want, got []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d context messages, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s: context message %d differs (%d bytes, want %d)", what, i, len(got[i]), len(want[i]))
			return
		}
	}
}

// TestBranchCorpusOracle branches every v2/v3 corpus transcript at several
// entries (the leaf, a third and two thirds of the active path, its first
// entry, the latest compaction, an entry off the path) and checks with the
// real pi SessionManager (without it, with session.Open) that the branch
// loads with the same context as the source had at that entry.
func TestBranchCorpusOracle(t *testing.T) {
	oracle.Optional(t) // without the oracle, checked against session.Open
	ctx := context.Background()
	checked := 0
	for p, tr := range corpusTranscripts(t) {
		nodes, path := tr.Nodes(), tr.ActivePath()
		ats := map[string]bool{"": true, nodes[path[0]].ID: true, nodes[path[len(path)/3]].ID: true, nodes[path[2*len(path)/3]].ID: true}
		if c := tr.Context(); c.Compaction >= 0 {
			ats[nodes[c.Compaction].ID] = true
		}
		on := map[int]bool{}
		for _, i := range path {
			on[i] = true
		}
		for i := len(nodes) - 1; i >= 0; i-- {
			if !on[i] && nodes[i].Kind == bs.KindEntry && nodes[i].ID != "" && nodes[i].Type == "message" {
				ats[nodes[i].ID] = true
				break
			}
		}
		for at := range ats {
			s, err := portable.Branch(ctx, tr, at, portable.BranchOptions{})
			if err != nil {
				t.Errorf("%s at %q: %v", testcorpus.Name(p), at, err)
				continue
			}
			line := nodes[path[len(path)-1]].Line
			if at != "" {
				n, _ := tr.Node(at)
				line = n.Line
			}
			want := piContext(t, upTo(t, p, line))
			got := piContext(t, writeSession(t, s))
			sameMessages(t, testcorpus.Name(p)+" at "+at, want.Messages, got.Messages)
			if len(got.Messages) == 0 && line > 2 {
				t.Errorf("%s at %q: empty context", testcorpus.Name(p), at)
			}
			checked++
		}
	}
	t.Logf("%d branches checked (with the pi oracle: %v)", checked, oracle.Available() == nil)
}

// TestExportImportCorpusOracle exports every v2/v3 corpus transcript,
// encodes, decodes and imports it, and checks with the real pi
// SessionManager (without it, with session.Open) that the imported
// session's context is the source's:
// the same summary first (when the source was compacted), then the same
// messages byte for byte.
func TestExportImportCorpusOracle(t *testing.T) {
	oracle.Optional(t) // without the oracle, checked against session.Open
	ctx := context.Background()
	summaries := 0
	for p, tr := range corpusTranscripts(t) {
		name := testcorpus.Name(p)
		x, err := portable.Export(ctx, tr, nil, portable.ExportOptions{})
		if err != nil {
			t.Errorf("%s: export: %v", name, err)
			continue
		}
		var b bytes.Buffer
		if err := x.Encode(&b); err != nil {
			t.Fatal(err)
		}
		y, err := portable.Decode(b.Bytes())
		if err != nil {
			t.Errorf("%s: decode own export: %v", name, err)
			continue
		}
		s, err := y.Session(portable.ImportOptions{})
		if err != nil {
			t.Errorf("%s: import: %v", name, err)
			continue
		}
		path := tr.ActivePath()
		want := piContext(t, upTo(t, p, tr.Nodes()[path[len(path)-1]].Line)).Messages
		got := piContext(t, writeSession(t, s)).Messages
		if x.Summary != nil {
			summaries++
			if len(got) == 0 || len(want) == 0 {
				t.Errorf("%s: empty context", name)
				continue
			}
			var a, c struct{ Role, Summary string }
			_ = json.Unmarshal(want[0], &a)
			_ = json.Unmarshal(got[0], &c)
			if a.Role != "compactionSummary" || c.Role != "compactionSummary" || c.Summary != x.Summary.Text || a.Summary != c.Summary {
				t.Errorf("%s: first message %s/%d chars, want the summary (%s/%d chars)", name, c.Role, len(c.Summary), a.Role, len(a.Summary))
			}
			want, got = want[1:], got[1:]
		}
		sameMessages(t, name, want, got)
	}
	if summaries == 0 {
		t.Error("no corpus transcript had a summary to carry")
	}
	t.Logf("round trips checked; %d carried a summary", summaries)
}
