package sidedir_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/sides3"
)

// s3Case is the store on an S3 server (versitygw on loopback): the same
// engine, its units objects under s3://bs-test/t/test/agents/s1/.
func s3Case(t *testing.T) mediumCase {
	srv := s3test.Start(t)
	srv.Env(t)
	root := filepath.Join(t.TempDir(), "agents")
	loc := filepath.Join(root, "s1")
	st, err := sides3.Open(srv.URL("t"), sidedir.Fixed(loc), sides3.Options{
		Roots: []sides3.Root{{Name: "agents", Dir: root}},
		Spool: filepath.Join(t.TempDir(), "spool"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	const prefix = "t/test/agents/s1/"
	c := srv.Client()
	return mediumCase{
		side: st.Store,
		units: func(t *testing.T) map[string][]byte {
			out := map[string][]byte{}
			for _, k := range srv.Keys(t, prefix) {
				o, err := c.GetObject(context.Background(), s3test.Bucket, k, minio.GetObjectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				data, err := io.ReadAll(o)
				o.Close()
				if err != nil {
					t.Fatal(err)
				}
				out[strings.TrimPrefix(k, prefix)] = data
			}
			return out
		},
		plant: func(t *testing.T, name string, data []byte, _ time.Time) {
			if _, err := c.PutObject(context.Background(), s3test.Bucket, prefix+name, strings.NewReader(string(data)), int64(len(data)), minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		where:   func(name string) string { return "s3://" + s3test.Bucket + "/" + prefix + name },
		objects: true,
	}
}
