package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/klauspost/compress/zstd"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// benchSize is the size of the generated session: BS_BENCH_MB megabytes,
// 100 by default.
func benchSize() int64 {
	if mb, err := strconv.Atoi(os.Getenv("BS_BENCH_MB")); err == nil && mb > 0 {
		return int64(mb) << 20
	}
	return 100 << 20
}

// benchNavigation is the smallest navigation_json the transcript_events
// CHECK accepts; OpenClaw requires one on every zstd row.
const benchNavigation = `{"version":1,"report":{"kind":"canonical"},"navigation":{},"reset":{},"model":{},"modelBytes":0,"modelWithoutCheckpointBytes":0,"withoutCustomDataBytes":0}`

// benchStore copies the smallest corpus store and inserts a generated
// session of about size bytes into it, compressing rows as OpenClaw does
// (zstd level 1 with checksum for rows of 1 KiB to 4 MiB without "\u"
// escapes, when that saves a tenth). It returns the store and the ref.
func benchStore(b *testing.B, size int64) (*sqlite.Store, bs.SessionRef, int64) {
	b.Helper()
	var src corpusStore
	for _, cs := range corpusStores(b) {
		if strings.HasPrefix(cs.name, "openclawlaw-cpu") {
			src = cs
		}
	}
	state, path := copyStore(b, src.path, src.agent)
	var buf bytes.Buffer
	if _, err := synth.Generate(&buf, synth.Options{Size: size, ImageEvery: 7}); err != nil {
		b.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
	if err != nil {
		b.Fatal(err)
	}
	const id, key = "bench-0000-4000-8000-000000000001", "agent:main:bench"
	db := rawDB(b, path)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	mustExec(b, tx, `INSERT INTO session_nodes(session_key, current_session_id, entry_json, updated_at, status) VALUES (?, ?, '{}', 1, 'done')`, key, id)
	mustExec(b, tx, `INSERT INTO session_windows(session_id, session_key, created_at, updated_at, transcript_updated_at) VALUES (?, ?, 1, 1, 1)`, id, key)
	mustExec(b, tx, `INSERT INTO transcript_rewrite_watermarks(session_id, generation, updated_at) VALUES (?, '00000000000000000000000000000000', 1)`, id)
	ins, err := tx.Prepare(`INSERT INTO transcript_events(session_id, seq, event_json, event_zstd, event_utf8_bytes, navigation_json, created_at) VALUES (?, ?, ?, ?, ?, ?, 1)`)
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for seq, line := range bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n")) {
		total += int64(len(line))
		var js, z, nav any = string(line), nil, nil
		if seq > 0 && len(line) >= 1024 && len(line) <= 4<<20 && !bytes.Contains(line, []byte(`\u`)) {
			c := enc.EncodeAll(line, nil)
			if len(c)+len(benchNavigation) <= len(line)-max(64, (len(line)+9)/10) {
				js, z, nav = nil, c, benchNavigation
			}
		}
		if _, err := ins.Exec(id, seq, js, z, len(line), nav); err != nil {
			b.Fatal(err)
		}
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	mustExec(b, db, "PRAGMA wal_checkpoint(TRUNCATE)")
	db.Close()
	st := sqlite.NewStore(state, sqlite.Options{})
	return st, bs.SessionRef{Backend: bs.BackendSQLite, Agent: src.agent, ID: id}, total
}

// BenchmarkOpen reads and indexes a generated session of about 100 MB
// (BS_BENCH_MB) with a Visitor that wants the full parse of toolResult
// rows, as the extractor's pass does.
func BenchmarkOpen(b *testing.B) {
	st, ref, total := benchStore(b, benchSize())
	ctx := context.Background()
	v := &bs.Visitor{
		Want:  func(raw []byte) bool { return bytes.Contains(raw, []byte(`"toolResult"`)) },
		Visit: func(*bs.Entry) error { return nil },
	}
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.Open(ctx, ref, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRewrite replaces the text of 50 toolResult rows of the
// generated session with placeholders, and back, in alternate iterations:
// one fenced transaction each. The Open that provides the base version is
// not timed.
func BenchmarkRewrite(b *testing.B) {
	st, ref, _ := benchStore(b, benchSize())
	ctx := context.Background()
	const rows = 50
	var there, back []bs.Edit
	_, err := st.Open(ctx, ref, &bs.Visitor{
		Want: func(raw []byte) bool { return bytes.Contains(raw, []byte(`"toolResult"`)) },
		Visit: func(e *bs.Entry) error {
			if len(there) >= rows || e.Role != "toolResult" {
				return nil
			}
			for _, v := range e.Strings {
				if toolResultText.MatchString(v.Pointer) {
					ph, _ := jsontext.AppendQuote(nil, "[[extracted-"+e.ID+"]]")
					sp := bs.Splice{Start: v.Start, End: v.End, With: ph}
					next := jsonedit.Apply(e.Raw, sp)
					s1, s2 := bs.LineSum(e.Raw), bs.LineSum(next)
					there = append(there, bs.Edit{Line: e.Line, ID: e.ID, Sum: s1, Splices: []bs.Splice{sp}})
					back = append(back, bs.Edit{Line: e.Line, ID: e.ID, Sum: s2, Splices: []bs.Splice{jsonedit.Diff(next, e.Raw)}})
					break
				}
			}
			return nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(there) != rows {
		b.Fatalf("found %d toolResult rows, want %d", len(there), rows)
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		b.StopTimer()
		tr, err := st.Open(ctx, ref, nil)
		if err != nil {
			b.Fatal(err)
		}
		edits := there
		if i%2 == 1 {
			edits = back
		}
		i++
		b.StartTimer()
		if err := st.Rewrite(ctx, ref, tr.Version(), edits, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(rows, "rows/op")
}

// BenchmarkSQLitePass is one extraction pass (the default triggers of the
// store, values of 500+ bytes, everything old) over the generated session
// of about 100 MB (BS_BENCH_MB), through the seam as the commands run it:
// read and decide, side files written and synced, one fenced transaction.
// Every iteration starts from a fresh copy of the store (not timed).
// TMPDIR decides the disk.
func BenchmarkSQLitePass(b *testing.B) {
	st, ref, total := benchStore(b, benchSize())
	ctx := context.Background()
	path, err := st.StorePath(ref.Agent)
	if err != nil {
		b.Fatal(err)
	}
	pristine := path + ".pristine"
	if err := copyFileBench(path, pristine); err != nil {
		b.Fatal(err)
	}
	// BS_BENCH_KEEP=<dir> keeps a copy of the generated state dir there,
	// to measure the command (`brainsurgeon prune`, its peak RSS) on it.
	if keep := os.Getenv("BS_BENCH_KEEP"); keep != "" {
		dst := filepath.Join(keep, "agents", ref.Agent, "agent")
		if err := os.MkdirAll(dst, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := copyFileBench(path, filepath.Join(dst, "openclaw-agent.sqlite")); err != nil {
			b.Fatal(err)
		}
	}
	p := extract.DefaultPolicy()
	p.Enabled, p.AgeThreshold, p.MinSavingTokens = true, 0, 0
	var read, side, write time.Duration
	var res *extract.Result
	b.SetBytes(total)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		// Our own copy: the sidecars of the previous iteration's write go
		// with it.
		os.Remove(path + "-wal")
		os.Remove(path + "-shm")
		if err := copyFileBench(pristine, path); err != nil {
			b.Fatal(err)
		}
		sideDir := b.TempDir()
		x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(sidedir.Fixed(sideDir))}
		b.StartTimer()
		res, err = x.Run(ctx, ref)
		if err != nil || !res.Written {
			b.Fatalf("pass: %v %+v", err, res)
		}
		read, side, write = read+res.ReadTime, side+res.SideTime, write+res.WriteTime
	}
	n := float64(b.N)
	b.ReportMetric(float64(res.Entries), "entries/op")
	b.ReportMetric(read.Seconds()/n*1000, "read-ms/op")
	b.ReportMetric(side.Seconds()/n*1000, "side-ms/op")
	b.ReportMetric(write.Seconds()/n*1000, "write-ms/op")
}

func copyFileBench(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}
