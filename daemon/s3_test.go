package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
)

// TestOpenChecksSideStore: the daemon refuses to start on a side store
// it cannot use (a missing bucket, a wrong secret, no server), with the
// store's own words, and starts on a good one.
func TestOpenChecksSideStore(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	for _, tt := range []struct {
		name, setting string
		env           func(t *testing.T)
		kind          error
		say           string
	}{
		{"good", srv.URL("good"), nil, nil, ""},
		{"missing bucket", strings.Replace(srv.URL("p"), s3test.Bucket, "missing-bucket", 1), nil, bs.ErrInvalid, `the bucket "missing-bucket" does not exist`},
		{"wrong secret", srv.URL("p"), func(t *testing.T) { t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret") }, bs.ErrInvalid, "refused the credentials from the environment"},
		{"no server", "s3://" + s3test.Bucket + "/p?endpoint=http://127.0.0.1:1&host=test&timeout=1s", nil, bs.ErrUnavailable, "cannot list"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != nil {
				tt.env(t)
			}
			agents := filepath.Join(t.TempDir(), "agents")
			if err := os.MkdirAll(filepath.Join(agents, "main", "sessions"), 0o700); err != nil {
				t.Fatal(err)
			}
			c := config.Default()
			c.SideStore = tt.setting
			if err := config.Save(agents, c); err != nil {
				t.Fatal(err)
			}
			d, err := Open(context.Background(), Options{AgentsDir: agents, Open: opener(agents)})
			if tt.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				d.Close()
				return
			}
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.say) {
				t.Fatalf("Open: %v, want %v saying %q", err, tt.kind, tt.say)
			}
			if strings.Contains(err.Error(), srv.Secret) || strings.Contains(err.Error(), "not-the-secret") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}
