package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/engine"
)

// TestChainFingerprintGolden pins the chain: the OpenClaw plugin computes
// the same values (openclaw-plugin/test).
func TestChainFingerprintGolden(t *testing.T) {
	a := engine.ChainFingerprint("", engine.Message{Role: "user", Timestamp: 1700000000000, Chars: 12})
	b := engine.ChainFingerprint(a, engine.Message{Role: "assistant", Timestamp: 1700000000001, ToolCallIDs: []string{"call_1", "call_2"}, Chars: 345})
	c := engine.ChainFingerprint(b, engine.Message{Role: "toolResult", Timestamp: 1700000000002, ToolCallID: "call_1", Chars: 0})
	for _, tc := range []struct{ got, want string }{{a, "a2706c8ebb9def19"}, {b, "fd3f0615f0230f88"}, {c, "0a9916ad4a7aa03e"}} {
		if tc.got != tc.want {
			t.Errorf("fingerprint: got %s, want %s", tc.got, tc.want)
		}
	}
}

// TestChainFingerprintBootstrap pins the chain of a list that starts with
// the host's bootstrap message: its timestamp counts as 0 and the chain
// tells it from an ordinary message of the same skeleton. The plugin's
// test "the chain of a bootstrap message" checks the same values.
func TestChainFingerprintBootstrap(t *testing.T) {
	boot := engine.Message{Role: "user", Chars: 21, Bootstrap: true}
	later := boot
	later.Timestamp = 1764000000000
	next := engine.Message{Role: "assistant", Timestamp: 1700000000001, Chars: 5}
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"bootstrap", engine.ChainFingerprint("", boot), "dd3cb152b213aab7"},
		{"bootstrap with a timestamp", engine.ChainFingerprint("", later), "dd3cb152b213aab7"},
		{"an ordinary user message", engine.ChainFingerprint("", engine.Message{Role: "user", Chars: 21}), "0c8790b349b91ccb"},
		{"after the bootstrap", engine.ChainFingerprint(engine.ChainFingerprint("", boot), next), "52c5423e3ac761a1"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, tc.got, tc.want)
		}
	}
}

// TestAssembleBase serves a call that sends only the messages after the
// ones acknowledged, and refuses a base it does not hold.
func TestAssembleBase(t *testing.T) {
	s := newSession(t)
	for k := range 6 {
		s.turn(k, 2000, 1000+10*k, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	ctx := context.Background()
	all := skeleton(t, s.path)
	first := request(all[:12], 0)
	v1, err := e.Assemble(ctx, ref, first)
	if err != nil || v1.Ack == nil || v1.Ack.Messages != 12 {
		t.Fatalf("first call: %v, ack %+v", err, v1.Ack)
	}
	full := request(all, 0)
	want, err := e.Assemble(ctx, ref, full)
	if err != nil {
		t.Fatal(err)
	}
	// The same call again, sending only what follows the first 12.
	if _, err := e.Assemble(ctx, ref, first); err != nil {
		t.Fatal(err)
	}
	next := request(all[12:], 0)
	next.Base, next.BaseFingerprint = v1.Ack.Messages, v1.Ack.Fingerprint
	got, err := e.Assemble(ctx, ref, next)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ack == nil || *got.Ack != *want.Ack || got.Matched != want.Matched || len(got.Replace) != len(want.Replace) {
		t.Fatalf("incremental call: ack %+v matched %d replaced %d; full call: ack %+v matched %d replaced %d",
			got.Ack, got.Matched, len(got.Replace), want.Ack, want.Matched, len(want.Replace))
	}
	bad := request(all[12:], 0)
	bad.Base, bad.BaseFingerprint = 12, "0000000000000000"
	if _, err := e.Assemble(ctx, ref, bad); !errors.Is(err, engine.ErrNeedFull) {
		t.Fatalf("a base of another fingerprint: got %v, want ErrNeedFull", err)
	}
	bad.Base, bad.BaseFingerprint = 99, got.Ack.Fingerprint
	if _, err := e.Assemble(ctx, ref, bad); !errors.Is(err, engine.ErrNeedFull) {
		t.Fatalf("a base longer than held: got %v, want ErrNeedFull", err)
	}
}
