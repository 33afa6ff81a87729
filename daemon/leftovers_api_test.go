package daemon_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/apitest"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// Leftovers collected into the trash are listed by GET /api/trash and put
// back, byte for byte with their times, by POST /api/trash/…/restore.
func TestLeftoversRestoreAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	live, err := os.ReadFile(sessions[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	bak := sessions[0].Path + ".bak-1-1767225600000"
	if err := os.WriteFile(bak, live, 0o640); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(bak, old, old); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(ctx, agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found, _, err := set.Store.(bs.LeftoverScanner).Leftovers(ctx)
	if err != nil || len(found) != 1 || found[0].Path != bak || found[0].Unique {
		t.Fatalf("leftovers %+v, %v; want the copy %s", found, err, bak)
	}
	item, err := trash.New(set.Store, set.AgentsDir, set.StateDir).Collect(ctx, found, trash.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}

	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h, err := d.Handler(ctx, api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var items []map[string]any
	apitest.Call(t, srv, "GET", "/api/trash", "", 200, &items)
	if len(items) != 1 || items[0]["id"] != item.ID || items[0]["kind"] != trash.ItemLeftovers {
		t.Fatalf("trash: %v", items)
	}
	apitest.Call(t, srv, "POST", "/api/trash/main/"+item.ID+"/restore", "", 200, nil)
	back, err := os.ReadFile(bak)
	if err != nil || string(back) != string(live) {
		t.Fatalf("the leftover is not back as it was: %v", err)
	}
	if fi, err := os.Stat(bak); err != nil || !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o640 {
		t.Errorf("restored %v, want mtime %v and mode 0640", fi, old)
	}
	if _, err := os.Stat(filepath.Join(set.StateDir, "trash", item.ID)); !os.IsNotExist(err) {
		t.Errorf("the item is still in the trash: %v", err)
	}
}
