package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidefault"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// TestSideStoreUnavailable holds what the API answers while the side store
// cannot be reached (errors wrapping brainsurgeon.ErrUnavailable): 503
// with the error's message on the REST routes and the plugin's source
// route (the plugin then passes the tool result through), and a tool
// answer (ok false) saying the value is kept and to try again later; the
// transcript is never touched.
func TestSideStoreUnavailable(t *testing.T) {
	f := newPlugFixture(t)
	side := sidefault.New(f.set.Side)
	inst := f.set.Installation
	inst.Side = side
	c := &client{tb: t, srv: serve(t, api.Options{Installation: inst, Backend: f.set})}
	// A source record and an extracted entry, written while the store is up.
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_1", `[{"type":"text","text":"stored"}]`, ""), 200, nil)
	appendLines(t, f.path(plugSessA),
		plugMsg("u2", "a1", 6, plugLine{"role": "user", "content": textContent("a")}),
		plugMsg("a2", "u2", 7, plugLine{"role": "assistant", "content": textContent("b"), "stopReason": "stop"}))
	cfg := config.Default()
	cfg.Enabled, cfg.IdleSeconds, cfg.AgeThresholdHours, cfg.MinSavingTokens, cfg.KeepRecent = true, 0, 0, 0, 1
	if _, err := prune.New(f.set.Store, f.set.Side, f.set.StateDir, cfg, nil).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f.path(plugSessA))
	if !bytes.Contains(before, []byte("[[extracted-r0]]")) {
		t.Fatal("r0 was not extracted")
	}
	side.Down()
	t.Cleanup(side.Up)

	t.Run("REST and source routes answer 503", func(t *testing.T) {
		for _, tt := range []struct{ name, method, path, body string }{
			{"source", "POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_2", `[{"type":"text","text":"x"}]`, "")},
			{"extracted value", "GET", "/api/sessions/main/" + plugSessA + "/entries/r0/extracted", ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				code, b, _ := c.do(tt.method, tt.path, tt.body)
				var e struct{ Error string }
				if err := json.Unmarshal(b, &e); err != nil {
					t.Fatalf("%s %s: %d %s: %v", tt.method, tt.path, code, b, err)
				}
				if code != http.StatusServiceUnavailable || !strings.Contains(e.Error, "side store unavailable") || !strings.Contains(e.Error, sidefault.Cause) {
					t.Fatalf("%s %s: %d %s, want 503 with the error's message", tt.method, tt.path, code, b)
				}
			})
		}
	})
	t.Run("tools say the value is kept, try later", func(t *testing.T) {
		for _, tt := range []struct{ name, params string }{
			{"restore of a source key", `{"action":"restore","value_id":"tc-call_1"}`},
			{"restore of an entry", `{"action":"restore","value_id":"r0"}`},
			{"a later page", `{"action":"restore","value_id":"tc-call_1","offset":5,"max_chars":1000}`},
			{"get_context", `{"action":"get_context"}`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				a := callTool(t, c, plugSessA, "purge_control", tt.params)
				text := a.text(t)
				for _, want := range []string{"cannot be", "side store", "cannot be reached", sidefault.Cause, "kept there", "again later"} {
					if !strings.Contains(text, want) {
						t.Fatalf("answer lacks %q: %+v\n%s", want, a, text)
					}
				}
				if a.OK || a.Error != text || a.Details["unavailable"] != true {
					t.Fatalf("answer %+v: want ok false, the text as the error and details.unavailable", a)
				}
			})
		}
	})
	after, _ := os.ReadFile(f.path(plugSessA))
	if !bytes.Equal(before, after) {
		t.Fatal("a failed call changed the transcript")
	}
	side.Up()
	if a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","value_id":"tc-call_1"}`); !a.OK || a.text(t) != "stored" {
		t.Fatalf("restore once the store is back: %+v", a)
	}
}
