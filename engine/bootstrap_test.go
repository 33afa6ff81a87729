package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

// bootstrapMsg is the host's bootstrap message as the plugin sends it:
// OpenClaw's {role: "user", content: "(session bootstrap)"}, timestamp 0.
var bootstrapMsg = hostMsg{Message: engine.Message{Role: "user", Chars: 21, Bootstrap: true}}

// withBootstrap returns msgs after the host's bootstrap message.
func withBootstrap(msgs []hostMsg) []hostMsg {
	return append([]hostMsg{bootstrapMsg}, msgs...)
}

// TestBootstrapAndTrimmedHistory proves the views of a history the host
// cut to its newest part (OpenClaw 2026.9.6 bounds what it loads), with
// and without the bootstrap message it puts first when the part kept
// starts with an assistant message: the bootstrap joins nothing and falls
// under the summary, which then leads the view; without a summary it is
// kept as the host gave it; the view says how many of the session's
// oldest messages the host left out. The session holds 12 turns of 4
// messages (user, assistant calling a tool, its result, answer).
func TestBootstrapAndTrimmedHistory(t *testing.T) {
	s := newSession(t)
	for k := range 12 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	all := skeleton(t, s.path)
	for _, tc := range []struct {
		name   string
		host   []hostMsg
		budget int // 0: the configured window, nothing summarized
		// summary is whether the view has one; trimmed its HostTrimmed;
		// pass whether it passes through.
		summary bool
		trimmed int
		pass    bool
	}{
		{"whole history", all, 0, false, 0, false},
		{"whole history, summarized", all, 3000, true, 0, false},
		{"trimmed", all[12:], 0, false, 12, false},
		{"trimmed, summarized", all[12:], 3000, true, 12, false},
		{"bootstrap", withBootstrap(all[13:]), 0, false, 13, false},
		{"bootstrap, summarized", withBootstrap(all[13:]), 3000, true, 13, false},
		{"bootstrap, nothing trimmed", withBootstrap(all), 3000, true, 0, false},
		// An older plugin does not mark it: a message the session does
		// not hold, in the span a summary would replace.
		{"bootstrap not marked", append([]hostMsg{{Message: engine.Message{Role: "user", Timestamp: clock.UnixMilli(), Chars: 21}}}, all[13:]...), 3000, false, 13, true},
		{"bootstrap not marked, nothing summarized", append([]hostMsg{{Message: engine.Message{Role: "user", Timestamp: clock.UnixMilli(), Chars: 21}}}, all[13:]...), 0, false, 13, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, st, testPolicy())
			e.SummaryWait = -1
			v, err := e.Assemble(context.Background(), ref, request(tc.host, tc.budget))
			if err != nil {
				t.Fatal(err)
			}
			if (v.Passthrough != "") != tc.pass || (v.Summary != nil) != tc.summary || v.HostTrimmed != tc.trimmed {
				t.Fatalf("passthrough %q, summary %v, host_trimmed %d; want passthrough %v, summary %v, host_trimmed %d",
					v.Passthrough, v.Summary != nil, v.HostTrimmed, tc.pass, tc.summary, tc.trimmed)
			}
			boot := tc.host[0].Bootstrap
			if v.Bootstrap != boot {
				t.Errorf("bootstrap %v, want %v", v.Bootstrap, boot)
			}
			if v.Matched != len(tc.host)-1 && (boot || tc.pass) {
				t.Errorf("matched %d of %d", v.Matched, len(tc.host))
			}
			// The view's first message is the summary, or the host's
			// first: never the summary followed by the bootstrap.
			switch {
			case v.Summary != nil && boot && v.FirstKept < 1:
				t.Errorf("first kept %d: the bootstrap follows the summary", v.FirstKept)
			case v.Summary == nil && v.FirstKept != 0:
				t.Errorf("first kept %d without a summary", v.FirstKept)
			}
			if v.Summary != nil && v.FirstKept < len(tc.host) && tc.host[v.FirstKept].Role == "toolResult" {
				t.Errorf("the view keeps a tool result (%d) without its call", v.FirstKept)
			}
			turns, err := e.SavedState(ref)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(turns.Turns); n != 1 || turns.Turns[0].HostTrimmed != tc.trimmed || turns.Turns[0].Bootstrap != boot {
				t.Errorf("turns %+v: want one with host_trimmed %d, bootstrap %v", turns.Turns, tc.trimmed, boot)
			}
		})
	}
}

// TestBootstrapUnderAnOlderSummary proves the view of a history the host
// cut past everything a summary made before covers: the summary still
// leads the view (it stands for what the host left out) and the bootstrap
// is left out after it; the host's next model-request call, which hands
// the view served, is its echo and nothing is trimmed then.
func TestBootstrapUnderAnOlderSummary(t *testing.T) {
	s := newSession(t)
	for k := range 12 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	all := skeleton(t, s.path)
	e := newEngine(t, st, testPolicy())
	e.SummaryWait = -1
	ctx := context.Background()
	v, err := e.Assemble(ctx, ref, request(all, 3000))
	if err != nil || v.Summary == nil {
		t.Fatalf("first view: summary %v, %v", v.Summary != nil, err)
	}
	// The host now keeps only what follows the summary's span, from an
	// assistant message on.
	from := v.FirstKept + 1
	for all[from].Role != "assistant" {
		from++
	}
	host := withBootstrap(all[from:])
	v2, err := e.Assemble(ctx, ref, request(host, 3000))
	if err != nil {
		t.Fatal(err)
	}
	if v2.Passthrough != "" || v2.Summary == nil || v2.FirstKept != 1 || v2.HostTrimmed != from {
		t.Fatalf("passthrough %q, summary %v, first kept %d, host_trimmed %d; want a summary, first kept 1, host_trimmed %d",
			v2.Passthrough, v2.Summary != nil, v2.FirstKept, v2.HostTrimmed, from)
	}
	mr := served(host, v2)
	v3, err := e.Assemble(ctx, ref, request(mr, 3000))
	if err != nil {
		t.Fatal(err)
	}
	if v3.Passthrough != "" || v3.Summary == nil || v3.FirstKept != 1 || v3.HostTrimmed != 0 || v3.Bootstrap {
		t.Fatalf("model-request call: passthrough %q, summary %v, first kept %d, host_trimmed %d, bootstrap %v; want the echo of the view",
			v3.Passthrough, v3.Summary != nil, v3.FirstKept, v3.HostTrimmed, v3.Bootstrap)
	}
}

// TestBootstrapIncrementalEqualsFull runs turns on a growing session whose
// host keeps only the newest messages (the first kept moves on as the
// session grows, and the bootstrap opens the list whenever it starts with
// an assistant message): the view the incremental path serves (the list
// sent as an extension of the one acknowledged, the session's cache
// extended) equals the full path's, byte for byte, and so do the states.
func TestBootstrapIncrementalEqualsFull(t *testing.T) {
	for _, budget := range []int{0, 3000} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) {
			s := newSession(t)
			const turns = 16
			for k := range turns {
				s.turn(k, 1500+500*(k%4), 1000+300*k, false)
			}
			full := s.lines
			s.write()
			all := skeleton(t, s.path)
			st, ref := openStore(t, s.path)
			incDir, fullDir := t.TempDir(), t.TempDir()
			mk := func(dir string, full bool) *engine.Engine {
				e := &engine.Engine{Store: st, StateDir: dir, Policy: testPolicy(), Settings: compact.DefaultSettings(),
					SummaryWait: time.Minute, Now: func() time.Time { return clock }}
				e.SetIDSource(&idSource{seed: 7})
				e.SetFull(full)
				return e
			}
			inc, ref0 := mk(incDir, false), mk(fullDir, true)
			ctx := context.Background()
			acks := map[string]*engine.Ack{}
			sent := map[string][]engine.Message{}
			summarized, based := 0, 0
			call := func(what, hostCall string, msgs []engine.Message) engine.View {
				t.Helper()
				copyState(t, incDir, fullDir)
				req := engine.Request{Messages: msgs, TokenBudget: budget, PromptChars: 40, HostCall: hostCall, Model: "m"}
				want, err := ref0.Assemble(ctx, ref, req)
				if err != nil {
					t.Fatalf("%s: full: %v", what, err)
				}
				ireq := req
				if a := acks[hostCall]; a != nil {
					prev := sent[hostCall]
					n, fp := 0, ""
					for n < len(prev) && n < len(msgs) && n < a.Messages && sameMsg(prev[n], msgs[n]) {
						fp = engine.ChainFingerprint(fp, msgs[n])
						n++
					}
					if n > 0 {
						ireq.Base, ireq.BaseFingerprint, ireq.Messages = n, fp, slices.Clone(msgs[n:])
						based++
					}
				}
				got, err := inc.Assemble(ctx, ref, ireq)
				if errors.Is(err, engine.ErrNeedFull) {
					got, err = inc.Assemble(ctx, ref, req)
				}
				if err != nil {
					t.Fatalf("%s: incremental: %v", what, err)
				}
				if g, w := comparable(t, got), comparable(t, want); g != w {
					t.Fatalf("%s: the incremental view differs from the full one:\n got %s\nwant %s", what, g, w)
				}
				if g, w := inc.StateJSON(ref), ref0.StateJSON(ref); g != w {
					t.Fatalf("%s: the incremental state differs from the full one:\n got %s\nwant %s", what, g, w)
				}
				if got.Passthrough != "" {
					t.Fatalf("%s: passthrough %q", what, got.Passthrough)
				}
				if got.Summary != nil {
					summarized++
					if got.Bootstrap && got.FirstKept < 1 {
						t.Fatalf("%s: the bootstrap follows the summary", what)
					}
				}
				acks[hostCall], sent[hostCall] = got.Ack, msgs
				return got
			}
			// The host keeps the newest 20 messages of the stored ones.
			const keep = 20
			for k := 6; k < turns; k++ {
				stored := 4 * k
				s.lines = full[:1+stored]
				s.write()
				from := max(stored-keep, 0)
				var hist []engine.Message
				if all[from].Role == "assistant" {
					hist = append(hist, bootstrapMsg.Message)
				}
				for _, m := range all[from:stored] {
					hist = append(hist, m.Message)
				}
				v := call(fmt.Sprintf("turn %d start", k), engine.CallTurnStart, hist)
				if v.HostTrimmed != from {
					t.Fatalf("turn %d: host_trimmed %d, want %d", k, v.HostTrimmed, from)
				}
				if k%2 == 0 {
					call(fmt.Sprintf("turn %d start again", k), engine.CallTurnStart, hist) // an overflow retry
				}
				mr := echo(hist, v)
				call(fmt.Sprintf("turn %d model request", k), engine.CallModelRequest, mr)
				// The turn's messages are stored; the next model request
				// hands the view served and them.
				s.lines = full[:1+stored+4]
				s.write()
				for _, m := range all[stored : stored+4] {
					mr = append(mr, m.Message)
				}
				call(fmt.Sprintf("turn %d model request after the tools", k), engine.CallModelRequest, mr)
			}
			t.Logf("budget %d: %d views summarized, %d calls with a base", budget, summarized, based)
			if budget > 0 && summarized == 0 {
				t.Fatal("no view was summarized")
			}
			if based == 0 {
				t.Fatal("no call was sent with a base")
			}
		})
	}
}
