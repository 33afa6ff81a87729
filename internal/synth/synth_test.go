package synth_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// usages returns the totalTokens of every assistant message of a
// generated transcript, in order.
func usages(t *testing.T, o synth.Options) []int64 {
	t.Helper()
	var b bytes.Buffer
	if _, err := synth.Generate(&b, o); err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, line := range bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n")) {
		var e struct {
			Message struct {
				Role  string `json:"role"`
				Usage *struct {
					Input, Output, CacheRead, CacheWrite, TotalTokens int64
				} `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %.80s: %v", line, err)
		}
		if u := e.Message.Usage; e.Message.Role == "assistant" && u != nil {
			if u.Input+u.Output+u.CacheRead+u.CacheWrite != u.TotalTokens {
				t.Errorf("usage %+v: the parts do not add up to totalTokens", *u)
			}
			out = append(out, u.TotalTokens)
		}
	}
	return out
}

// TestGrowingUsage: by default every assistant message records the same
// usage; with GrowingUsage the usage grows with the transcript, as a real
// session's does.
func TestGrowingUsage(t *testing.T) {
	o := synth.Options{Size: 64 << 10, MinResult: 1500, MaxResult: 3000}
	fixed := usages(t, o)
	if len(fixed) < 10 {
		t.Fatalf("%d assistant messages, want 10 or more", len(fixed))
	}
	for _, u := range fixed {
		if u != 2340 && u != 2480 {
			t.Fatalf("fixed usage %v, want 2,340 and 2,480 only", fixed)
		}
	}
	o.GrowingUsage = true
	grow := usages(t, o)
	if len(grow) != len(fixed) {
		t.Fatalf("%d assistant messages with GrowingUsage, %d without: the option must not change the transcript's shape", len(grow), len(fixed))
	}
	for i := 1; i < len(grow); i++ {
		if grow[i] <= grow[i-1] {
			t.Fatalf("usage %v does not grow at message %d", grow, i)
		}
	}
	if first, last := grow[0], grow[len(grow)-1]; first < 3000 || last < first+(64<<10)/4*3/4 {
		t.Errorf("usage from %d to %d tokens, want from the 3,000-token overhead up by about a token per 4 bytes", first, last)
	}
}
