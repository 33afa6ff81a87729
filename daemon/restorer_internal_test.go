package daemon

import (
	"context"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/demo"
)

// TestRestorerFollowsConfig: the API's Restorer is the same while
// the config is unchanged (its per-session locks serialise write-backs),
// and a new one, with the new policy, after a change.
func TestRestorerFollowsConfig(t *testing.T) {
	ctx := context.Background()
	agents, _, err := demo.Write(t.TempDir(), demo.Options{Sessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, Options{AgentsDir: agents, Open: opener(agents)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r1 := d.Restorer()
	if r1 == nil || d.Restorer() != r1 {
		t.Fatal("the Restorer changed while the config did not")
	}
	if _, err := d.Config().Set(ctx, []byte(`{"keep_purge_control_calls": true}`)); err != nil {
		t.Fatal(err)
	}
	r2 := d.Restorer()
	if r2 == r1 || !r2.KeepPurgeControlCalls {
		t.Fatalf("after a config change: same Restorer %v, keep_purge_control_calls %v", r2 == r1, r2.KeepPurgeControlCalls)
	}
}
