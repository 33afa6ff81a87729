package session

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// seen is what a Visitor saw of one line.
type seen struct {
	line   int
	offset int64
	raw    string
	full   bool
}

// pureWant is a Want that depends on the raw bytes alone.
func pureWant(raw []byte) bool { return len(raw) > 120 || bytes.Contains(raw, []byte(`"thinking"`)) }

// readBoth indexes data sequentially and in parallel (with the given block
// size) and fails when the indexes or the lines visited differ.
func readBoth(t *testing.T, name string, data []byte, block int) {
	t.Helper()
	old := blockSize
	blockSize = block
	defer func() { blockSize = old }()
	for _, mode := range []string{"index", "want", "all"} {
		var got [2][]seen
		var ix [2]*Index
		for k, parallel := range []bool{false, true} {
			v := &bs.Visitor{Concurrent: true, Visit: func(e *bs.Entry) error {
				got[k] = append(got[k], seen{e.Line, e.Offset, string(e.Raw), e.Strings != nil})
				// Prepare ran for exactly the lines Want accepted (parallel
				// reads only).
				if want := parallel && (mode == "all" || mode == "want" && pureWant(e.Raw)); (e.Prepared == e.Line) != want {
					t.Errorf("%s line %d: Prepared %v, want it set: %v", name, e.Line, e.Prepared, want)
				}
				return nil
			}, Prepare: func(e *bs.Entry) any { return e.Line }}
			switch mode {
			case "index":
				v = nil
			case "want":
				v.Want = pureWant
			}
			var err error
			if parallel {
				ix[k], err = readParallel(context.Background(), bytes.NewReader(data), name, v, int64(len(data)))
			} else {
				ix[k], err = read(context.Background(), bytes.NewReader(data), name, v, 0)
			}
			if err != nil {
				t.Fatalf("%s (block %d, %s, parallel %v): %v", name, block, mode, parallel, err)
			}
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Fatalf("%s (block %d, %s): visited lines differ: %d sequential, %d parallel", name, block, mode, len(got[0]), len(got[1]))
		}
		if !reflect.DeepEqual(ix[0], ix[1]) {
			t.Fatalf("%s (block %d, %s): indexes differ:\n%+v\n%+v", name, block, mode, ix[0], ix[1])
		}
	}
}

// TestParallelReadMatches: the parallel read gives the same index and
// visits the same lines, with the same views, as the sequential one, on
// edge cases, every corpus transcript and a generated one, with blocks
// smaller than a line, about a line and large.
func TestParallelReadMatches(t *testing.T) {
	long := strings.Repeat("x", 5000)
	cases := map[string]string{
		"Empty":        "",
		"OneNewline":   "\n",
		"Unterminated": `{"type":"session","version":3,"id":"s"}` + "\n" + `{"type":"message","id":"a","parentId":null}`,
		"BlankLines":   "\n\n" + `{"type":"message","id":"a"}` + "\n\n",
		"CRLF":         `{"type":"session","version":3,"id":"s"}` + "\r\n" + `{"type":"message","id":"a"}` + "\r\n",
		"Malformed":    `{"type":"session","version":3,"id":"s"}` + "\n{not json\n" + `{"type":"message","id":"a"}` + "\n\x00\xff\n",
		"LongLines": `{"type":"session","version":3,"id":"s"}` + "\n" + `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":"` + long + `"}]}}` + "\n" +
			`{"type":"message","id":"b","parentId":"a","message":{"role":"toolResult","content":[{"type":"text","text":"` + long + long + `"}]}}`,
		"Leaf": `{"type":"session","version":3,"id":"s"}` + "\n" + `{"type":"message","id":"a"}` + "\n" + `{"type":"message","id":"b","parentId":"a"}` + "\n" +
			`{"type":"leaf","id":"l","targetId":"a"}` + "\n" + `{"type":"message","id":"c","parentId":"a","appendMode":"side"}` + "\n",
	}
	for name, data := range cases {
		for _, block := range []int{1, 7, 64, 4096} {
			readBoth(t, name, []byte(data), block)
		}
	}
	for _, p := range testcorpus.Transcripts(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range []int{512, 64 << 10} {
			readBoth(t, testcorpus.Name(p), data, block)
		}
	}
	var gen bytes.Buffer
	if _, err := synth.Generate(&gen, synth.Options{Size: 3 << 20, Density: synth.DensityReal}); err != nil {
		t.Fatal(err)
	}
	readBoth(t, "synth", gen.Bytes(), 256<<10)
}

// TestParallelReadStops: a Visit error and a cancelled context stop a
// parallel read with that error, and no goroutine is left blocked.
func TestParallelReadStops(t *testing.T) {
	old := blockSize
	blockSize = 256
	defer func() { blockSize = old }()
	var gen bytes.Buffer
	if _, err := synth.Generate(&gen, synth.Options{Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop here")
	n := 0
	v := &bs.Visitor{Concurrent: true, Visit: func(e *bs.Entry) error {
		if n++; n == 50 {
			return stop
		}
		return nil
	}}
	if _, err := readParallel(context.Background(), bytes.NewReader(gen.Bytes()), "x", v, 0); !errors.Is(err, stop) {
		t.Fatalf("visit error: got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	v.Visit = func(e *bs.Entry) error {
		if n++; n == 50 {
			cancel()
		}
		return nil
	}
	if _, err := readParallel(ctx, bytes.NewReader(gen.Bytes()), "x", v, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: got %v", err)
	}
	if _, err := readParallel(context.Background(), iotestErr{}, "x", nil, 0); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("read error: got %v", err)
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// FuzzParallelRead: on any input and block size, the parallel read agrees
// with the sequential one.
func FuzzParallelRead(f *testing.F) {
	f.Add([]byte(`{"type":"session","version":3,"id":"s"}`+"\n"+`{"type":"message","id":"a"}`), uint8(3))
	f.Add([]byte("\n\n{x\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, block uint8) {
		readBoth(t, "fuzz", data, int(block)+1)
	})
}
