package sides3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/sides3"
)

// openB is open for a benchmark, under the prefix "bench".
func openB(b *testing.B, srv *s3test.Server) (*sides3.Store, *s3test.Counter, string) {
	return open(b, srv, srv.URL("bench"))
}

// open returns a store of one side location under srv's bucket, with
// every request counted.
func open(t testing.TB, srv *s3test.Server, setting string) (*sides3.Store, *s3test.Counter, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "agents")
	loc := filepath.Join(root, "main", "sessions", "extracted", "s1")
	cnt := &s3test.Counter{}
	st, err := sides3.Open(setting, sidedir.Fixed(loc), sides3.Options{
		Roots:     []sides3.Root{{Name: "agents", Dir: root}},
		Spool:     filepath.Join(t.TempDir(), "spool"),
		Transport: cnt,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, cnt, loc
}

// values returns n records of about size bytes each.
func values(n, size int) []bs.SideRecord {
	recs := make([]bs.SideRecord, n)
	for i := range recs {
		id := fmt.Sprintf("entry-%04d", i)
		rnd := rand.New(rand.NewPCG(uint64(i), uint64(size)))
		words := []string{"tool", "result", "file", "line", "error", "the", "value", "of", "output", "pass", "0x1f", "ok"}
		var b strings.Builder
		for b.Len() < size {
			b.WriteString(words[rnd.IntN(len(words))])
			b.WriteByte(' ')
		}
		body := b.String()[:size]
		recs[i] = bs.SideRecord{EntryID: id, Data: []byte(`{"entryId":"` + id + `","value":"` + body + `"}`)}
	}
	return recs
}

// TestRequests: a pass of 500 values is one PUT; reading one value back
// lists the session's prefix and fetches that value's frame (and, on a
// cold store, the pack's last 128 KiB for its index), never the pack.
func TestRequests(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	st, cnt, _ := open(t, srv, srv.URL("bs"))
	ctx := context.Background()
	recs := values(500, 4000)
	if err := st.Put(ctx, bs.SessionRef{}, recs); err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(ctx, bs.SessionRef{}); err != nil {
		t.Fatal(err)
	}
	if got := cnt.Snapshot(); got["PUT"] != 1 || len(got) != 1 {
		t.Fatalf("a pass of 500 values sent %v, want exactly one PUT", got)
	}
	keys := srv.Keys(t, "bs/test/agents/main/sessions/extracted/s1/")
	if len(keys) != 1 || !strings.HasSuffix(keys[0], ".bszst") {
		t.Fatalf("objects %v, want one pack", keys)
	}
	oi, err := srv.Client().StatObject(ctx, s3test.Bucket, keys[0], minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	packSize := oi.Size
	t.Logf("500 values of 4 KB: one PUT of a %d-byte pack (%d bytes on the wire)", packSize, cnt.BytesOut)

	// Cold: another process (no caches).
	cold, cnt2, _ := open(t, srv, srv.URL("bs"))
	want := recs[250]
	got, err := cold.Get(ctx, bs.SessionRef{}, want.EntryID)
	if err != nil || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("Get: %.60q, %v", got.Data, err)
	}
	if r := cnt2.Snapshot(); r["LIST"] != 1 || r["GET"] != 2 || len(r) != 2 {
		t.Errorf("a cold read sent %v, want one LIST and two GETs (the index, the frame)", r)
	}
	if len(cnt2.Ranges) != 2 || cnt2.Ranges[0] != fmt.Sprintf("bytes=%d-%d", packSize-128<<10, packSize-1) {
		t.Errorf("ranges %v, want the pack's tail then one frame", cnt2.Ranges)
	}
	coldBytes := cnt2.BytesIn
	cnt2.Reset()
	want = recs[7]
	got, err = cold.Get(ctx, bs.SessionRef{}, want.EntryID)
	if err != nil || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("Get: %.60q, %v", got.Data, err)
	}
	if r := cnt2.Snapshot(); r["LIST"] != 1 || r["GET"] != 1 || len(r) != 2 {
		t.Errorf("a warm read sent %v, want one LIST and one GET (the frame)", r)
	}
	if cnt2.BytesIn >= packSize/4 {
		t.Errorf("a warm read fetched %d bytes of a %d-byte pack", cnt2.BytesIn, packSize)
	}
	t.Logf("restore one value of a 500-value pack (%d bytes): cold %d bytes fetched, warm %d bytes (ranges %v)", packSize, coldBytes, cnt2.BytesIn, cnt2.Ranges)
	for _, r := range recs {
		got, err := cold.Get(ctx, bs.SessionRef{}, r.EntryID)
		if err != nil || !bytes.Equal(got.Data, r.Data) {
			t.Fatalf("Get %s: %.60q, %v", r.EntryID, got.Data, err)
		}
	}
	infos, err := cold.List(ctx, bs.SessionRef{})
	if err != nil || len(infos) != 500 || !strings.HasPrefix(infos[0].Location, "s3://bs-test/bs/test/agents/main/sessions/extracted/s1/pack-") {
		t.Fatalf("List: %d infos, %v (first %+v)", len(infos), err, infos[0])
	}
}

// TestCheck: every bad setting is refused by Check with an error that
// says what is wrong, of the right kind, holding no secret.
func TestCheck(t *testing.T) {
	srv := s3test.Start(t)
	srv.AddUser(t, "nobody", "nobody-secret-1")
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	slow := srv.Slow(t, 3*time.Second)
	for _, tt := range []struct {
		name    string
		setting string
		env     func(t testing.TB)
		kind    error
		say     string
	}{
		{"good", srv.URL("p"), srv.Env, nil, ""},
		{"missing bucket", strings.Replace(srv.URL("p"), s3test.Bucket, "no-such-bucket", 1), srv.Env, bs.ErrInvalid,
			`the bucket "no-such-bucket" does not exist at ` + srv.Endpoint},
		{"wrong secret", srv.URL("p"), func(t testing.TB) { srv.Env(t); t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-x") }, bs.ErrInvalid,
			srv.Endpoint + " refused the credentials from the environment (AWS_ACCESS_KEY_ID)"},
		{"no permission", srv.URL("p"), func(t testing.TB) {
			srv.Env(t)
			t.Setenv("AWS_ACCESS_KEY_ID", "nobody")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "nobody-secret-1")
		}, bs.ErrInvalid, "the credentials from the environment (AWS_ACCESS_KEY_ID) may not"},
		{"closed port", "s3://" + s3test.Bucket + "/p?endpoint=http://" + closed + "&host=test&timeout=2s", srv.Env, bs.ErrUnavailable,
			"cannot list"},
		{"slow server", "s3://" + s3test.Bucket + "/p?endpoint=http://" + slow.Addr + "&host=test&timeout=500ms", srv.Env, bs.ErrUnavailable,
			"cannot list"},
		{"profile file", srv.URL("p"), func(t testing.TB) {
			f := filepath.Join(t.TempDir(), "credentials")
			if err := os.WriteFile(f, []byte("[bs]\naws_access_key_id = "+srv.Access+"\naws_secret_access_key = "+srv.Secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("AWS_ACCESS_KEY_ID", "")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "")
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", f)
			t.Setenv("AWS_PROFILE", "bs")
		}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.env(t)
			st, _, _ := open(t, srv, tt.setting)
			start := time.Now()
			err := st.Check(ctx)
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.say) {
				t.Fatalf("Check: %v\nwant %v saying %q", err, tt.kind, tt.say)
			}
			if errors.Is(err, bs.ErrNotFound) {
				t.Errorf("an unusable store must never look like a missing value: %v", err)
			}
			for _, secret := range []string{srv.Secret, "wrong-secret-x", "nobody-secret-1"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error holds a secret: %v", err)
				}
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("Check took %v", d)
			}
			t.Logf("%s: %v", tt.name, err)
		})
	}
	t.Run("no credentials", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
		_, err := sides3.Open(srv.URL("p"), sidedir.Fixed(t.TempDir()), sides3.Options{Roots: []sides3.Root{{Name: "agents", Dir: t.TempDir()}}, Spool: t.TempDir()})
		if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") {
			t.Fatalf("Open without credentials: %v", err)
		}
	})
}

// TestUnreachable: with the server gone, every operation fails with
// ErrUnavailable (never ErrNotFound: a value is not missing because the
// store is down), the pending records are kept in the spool's stead, and
// with the server back the same store works again.
func TestUnreachable(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	st, _, _ := open(t, srv, srv.URL("u", "timeout=2s"))
	ctx := context.Background()
	ref := bs.SessionRef{}
	recs := values(10, 2000)
	if err := st.Put(ctx, ref, recs[:5]); err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, err := st.Get(ctx, ref, recs[0].EntryID); !errors.Is(err, bs.ErrUnavailable) || errors.Is(err, bs.ErrNotFound) {
		t.Errorf("Get while down: %v, want ErrUnavailable", err)
	}
	if _, err := st.List(ctx, ref); !errors.Is(err, bs.ErrUnavailable) {
		t.Errorf("List while down: %v, want ErrUnavailable", err)
	}
	if err := st.Put(ctx, ref, recs[5:]); err != nil {
		t.Fatal(err) // buffered locally
	}
	if err := st.Sync(ctx, ref); !errors.Is(err, bs.ErrUnavailable) {
		t.Errorf("Sync while down: %v, want ErrUnavailable", err)
	}
	srv.Restart(t)
	for _, r := range recs[:5] {
		if got, err := st.Get(ctx, ref, r.EntryID); err != nil || !bytes.Equal(got.Data, r.Data) {
			t.Errorf("Get %s after the restart: %.40q, %v", r.EntryID, got.Data, err)
		}
	}
	if _, err := st.Get(ctx, ref, recs[7].EntryID); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("a value whose Sync failed: %v, want ErrNotFound (the pass that wrote it failed, so no transcript names it)", err)
	}
}

// TestRemovedObject: a pack removed behind the store's back (by another
// host's repack) is "removed meanwhile", as a vanished file is.
func TestRemovedObject(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	st, _, _ := open(t, srv, srv.URL("r"))
	ctx := context.Background()
	recs := values(3, 100)
	if err := st.Put(ctx, bs.SessionRef{}, recs); err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(ctx, bs.SessionRef{}); err != nil {
		t.Fatal(err)
	}
	keys := srv.Keys(t, "r/")
	if len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	if err := srv.Client().RemoveObject(ctx, s3test.Bucket, keys[0], minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, bs.SessionRef{}, recs[0].EntryID); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("Get of a value whose pack was removed: %v, want ErrNotFound", err)
	}
}
