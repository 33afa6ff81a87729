package sidedir

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// A pack holds the records of one pass over one session: zstd frames of
// records (small records share a frame of up to frameTarget bytes, a
// larger one has a frame of its own), then a zstd skippable frame with
// the index (magic 0x184D2A50, little-endian uint32 length, packIndex as
// JSON), then a 24-byte trailer, another skippable frame (magic
// 0x184D2A5F, length 16, the index frame's offset as a little-endian
// uint64, then "bspack/1"). Decoders skip skippable frames, so
// `zstd -dc <pack>` prints every record (the extraction's records are
// JSON lines). A pack is written once under a temp name, fsynced and
// renamed; it is never edited.
const (
	// PackFormat names the index's format. Version 2 checks each record
	// with a CRC-32C (Castagnoli) in the index; version 1, still read,
	// with a sha256 of the record. The record itself holds each value's
	// sha256 in both (StoredValue.SHA256), which restore and verify check:
	// the index's checksum only finds a damaged record, and a second
	// sha256 over every record cost a tenth of a pass's CPU.
	PackFormat   = "brainsurgeon.pack/2"
	packFormatV1 = "brainsurgeon.pack/1"
	packPrefix   = "pack-"
	packSuffix   = ".bszst"
	// packTemp starts the name of a pack being written.
	packTemp     = ".pack-"
	indexMagic   = 0x184D2A50
	trailerMagic = 0x184D2A5F
	trailerSize  = 24
	trailerTag   = "bspack/1"
	packTimeFmt  = "20060102T150405.000000000Z"
	// frameTarget is the uncompressed size at which a frame of records is
	// closed. One frame per small record costs four times the CPU and
	// three times the space (zstd's tables are built per frame): measured
	// on real-density transcripts, 3.5 KB records compress at 131 MB/s
	// with ratio 2.8 one by one, at 578 MB/s with ratio 9.4 in 64 KB
	// frames. A restore still reads one frame.
	frameTarget = 64 << 10
)

// packIndex is the index of a pack.
type packIndex struct {
	Format string `json:"format"`
	// PassTime is when the pack was written; its name carries it too, and
	// an index read without one takes the name's.
	PassTime time.Time `json:"pass_time"`
	// Entries maps an entry id to its record's frame.
	Entries map[string]packEntry `json:"entries"`
	// Deleted maps the entries deleted by this pack to the deletion time:
	// older records of them are gone.
	Deleted map[string]time.Time `json:"deleted,omitempty"`

	// frameRaw is, by frame offset, the uncompressed bytes of the records
	// indexed in the frame: an entry's share of a frame's stored bytes is
	// its part of them.
	frameRaw map[int64]int64
}

// sumFrames fills frameRaw; it is called before the index is shared.
func (ix *packIndex) sumFrames() {
	ix.frameRaw = make(map[int64]int64)
	for _, x := range ix.Entries {
		ix.frameRaw[x.Offset] += x.Size
	}
}

// stored returns the bytes that e's record takes in the pack: its share
// of its frame.
func (ix *packIndex) stored(e packEntry) int64 {
	if raw := ix.frameRaw[e.Offset]; raw > e.Size && raw > 0 {
		return max(1, e.Length*e.Size/raw)
	}
	return e.Length
}

// packEntry locates one record in a pack.
type packEntry struct {
	// Offset and Length are the zstd frame's place in the pack.
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// Start is where the record starts in the frame's decompressed bytes
	// (0 when the frame holds only this record, as in every pack of the
	// first pack version).
	Start int64 `json:"start,omitempty"`
	// Size is the record's length. CRC32C is the hex CRC-32C of its
	// bytes (format 2), SHA256 their hex sha256 (format 1).
	Size   int64     `json:"size"`
	SHA256 string    `json:"sha256,omitempty"`
	CRC32C string    `json:"crc32c,omitempty"`
	Time   time.Time `json:"time"`
}

// isPackName tells whether name is a finished pack's.
func isPackName(name string) bool {
	return strings.HasPrefix(name, packPrefix) && strings.HasSuffix(name, packSuffix)
}

// packName returns the name of a pack written at t: names sort by time.
func packName(t time.Time) string {
	return packPrefix + t.UTC().Format(packTimeFmt) + "-" + randHex() + packSuffix
}

// skippable returns a skippable frame's header.
func skippable(magic uint32, n int) []byte {
	var h [8]byte
	binary.LittleEndian.PutUint32(h[:4], magic)
	binary.LittleEndian.PutUint32(h[4:], uint32(n))
	return h[:]
}

// packTail returns the index frame and the trailer of a pack whose index
// frame starts at off.
func packTail(ix *packIndex, off int64) ([]byte, error) {
	js, err := marshalIndex(ix)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8+len(js)+trailerSize)
	out = append(out, skippable(indexMagic, len(js))...)
	out = append(out, js...)
	out = append(out, skippable(trailerMagic, 16)...)
	out = binary.LittleEndian.AppendUint64(out, uint64(off))
	out = append(out, trailerTag...)
	return out, nil
}

// marshalIndex encodes ix exactly as encoding/json does, by hand when
// every key is a plain string (most keys are): reflection over the
// 20,000 entries of a real-density pass took 60 ms, on the path between
// the last record and the transcript's rewrite.
func marshalIndex(ix *packIndex) ([]byte, error) {
	ids := make([]string, 0, len(ix.Entries))
	for id := range ix.Entries {
		if !indexPlain(id) {
			return json.Marshal(ix)
		}
		ids = append(ids, id)
	}
	del := make([]string, 0, len(ix.Deleted))
	for id := range ix.Deleted {
		if !indexPlain(id) {
			return json.Marshal(ix)
		}
		del = append(del, id)
	}
	sort.Strings(ids)
	sort.Strings(del)
	if !indexPlain(ix.Format) || !jsonTime(ix.PassTime) {
		return json.Marshal(ix)
	}
	out := make([]byte, 0, 64+len(ids)*(len(`"":{"offset":,"length":,"start":,"size":,"sha256":"","time":""},`)+40+64+30))
	out = append(out, `{"format":"`...)
	out = append(out, ix.Format...)
	out = append(out, `","pass_time":"`...)
	out = ix.PassTime.AppendFormat(out, time.RFC3339Nano)
	out = append(out, `","entries":`...)
	if ix.Entries == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, '{')
		for i, id := range ids {
			e := ix.Entries[id]
			if i > 0 {
				out = append(out, ',')
			}
			if !indexPlain(e.SHA256) || !indexPlain(e.CRC32C) || !jsonTime(e.Time) {
				return json.Marshal(ix)
			}
			out = append(out, '"')
			out = append(out, id...)
			out = append(out, `":{"offset":`...)
			out = strconv.AppendInt(out, e.Offset, 10)
			out = append(out, `,"length":`...)
			out = strconv.AppendInt(out, e.Length, 10)
			if e.Start != 0 {
				out = append(out, `,"start":`...)
				out = strconv.AppendInt(out, e.Start, 10)
			}
			out = append(out, `,"size":`...)
			out = strconv.AppendInt(out, e.Size, 10)
			if e.SHA256 != "" {
				out = append(out, `,"sha256":"`...)
				out = append(out, e.SHA256...)
				out = append(out, '"')
			}
			if e.CRC32C != "" {
				out = append(out, `,"crc32c":"`...)
				out = append(out, e.CRC32C...)
				out = append(out, '"')
			}
			out = append(out, `,"time":"`...)
			out = e.Time.AppendFormat(out, time.RFC3339Nano)
			out = append(out, `"}`...)
		}
		out = append(out, '}')
	}
	if len(ix.Deleted) > 0 {
		out = append(out, `,"deleted":{`...)
		for i, id := range del {
			t := ix.Deleted[id]
			if !jsonTime(t) {
				return json.Marshal(ix)
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, '"')
			out = append(out, id...)
			out = append(out, `":"`...)
			out = t.AppendFormat(out, time.RFC3339Nano)
			out = append(out, '"')
		}
		out = append(out, '}')
	}
	return append(out, '}'), nil
}

// indexPlain tells whether encoding/json writes s between quotes as it
// is (it escapes "<", ">" and "&" too).
func indexPlain(s string) bool {
	return plain(s) && !strings.ContainsAny(s, "<>&")
}

// jsonTime tells whether encoding/json writes t as t.Format(RFC3339Nano)
// (it fails on years outside 0–9999).
func jsonTime(t time.Time) bool {
	y := t.Year()
	if y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && off > -24*3600 && off < 24*3600
}

// readPackIndex reads the index of the pack f of the given size. Errors
// wrap bs.ErrCorrupt.
func readPackIndex(f io.ReaderAt, size int64, path string) (*packIndex, error) {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("pack %s: %s: %w", path, fmt.Sprintf(why, args...), bs.ErrCorrupt)
	}
	if size < trailerSize+8 {
		return nil, bad("truncated (%d bytes)", size)
	}
	var tr [trailerSize]byte
	if _, err := f.ReadAt(tr[:], size-trailerSize); err != nil {
		return nil, bad("read trailer: %v", err)
	}
	if binary.LittleEndian.Uint32(tr[:4]) != trailerMagic || binary.LittleEndian.Uint32(tr[4:8]) != 16 || string(tr[16:]) != trailerTag {
		return nil, bad("no index trailer (truncated?)")
	}
	off := int64(binary.LittleEndian.Uint64(tr[8:16]))
	if off < 0 || off > size-trailerSize-8 {
		return nil, bad("index offset %d out of range", off)
	}
	buf := make([]byte, size-trailerSize-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, bad("read index: %v", err)
	}
	if binary.LittleEndian.Uint32(buf[:4]) != indexMagic || int64(binary.LittleEndian.Uint32(buf[4:8])) != int64(len(buf)-8) {
		return nil, bad("no index frame at offset %d", off)
	}
	ix := &packIndex{}
	if err := json.Unmarshal(buf[8:], ix); err != nil {
		return nil, bad("index: %v", err)
	}
	if ix.Format != PackFormat && ix.Format != packFormatV1 {
		return nil, bad("index format %q, want %q or %q", ix.Format, PackFormat, packFormatV1)
	}
	for id, e := range ix.Entries {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > off || e.Start < 0 || e.Size < 0 {
			return nil, bad("entry %s: frame %d+%d (record at %d, %d bytes) out of range", id, e.Offset, e.Length, e.Start, e.Size)
		}
		if ix.Format == packFormatV1 && e.SHA256 == "" || ix.Format == PackFormat && len(e.CRC32C) != 8 {
			return nil, bad("entry %s: no record checksum (sha256 %q, crc32c %q) in a %s index", id, e.SHA256, e.CRC32C, ix.Format)
		}
	}
	if ix.PassTime.IsZero() {
		// A pack's time is its pass time: the index's, or the name's when
		// the index has none.
		ix.PassTime = parsePackTime(filepath.Base(path))
	}
	ix.sumFrames()
	return ix, nil
}

// parsePackTime reads the pass time from a pack's name; it is zero when
// the name holds none.
func parsePackTime(name string) time.Time {
	s := strings.TrimPrefix(name, packPrefix)
	if i := strings.LastIndexByte(s, '-'); i > 0 {
		s = s[:i]
	}
	t, _ := time.Parse(packTimeFmt, s)
	return t
}

// castagnoli is the CRC-32C table (hardware-assisted on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordCRC returns the hex CRC-32C of a record, as the index holds it.
func recordCRC(data []byte) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc32.Checksum(data, castagnoli))
	return hex.EncodeToString(b[:])
}

// checkRecord checks a record read from a pack against its index entry:
// its size and its CRC-32C, or its sha256 in a format 1 pack.
func checkRecord(data []byte, e packEntry) error {
	if int64(len(data)) != e.Size {
		return fmt.Errorf("the record has %d bytes, the index says %d", len(data), e.Size)
	}
	if e.CRC32C != "" {
		if got := recordCRC(data); got != e.CRC32C {
			return fmt.Errorf("crc32c %s of the record does not match the index's %s", got, e.CRC32C)
		}
		return nil
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != e.SHA256 {
		return fmt.Errorf("sha256 of the record does not match the index")
	}
	return nil
}

// statKey identifies a version of a file for the index cache.
type statKey struct {
	size  int64
	mtime time.Time
}

func keyOf(fi os.FileInfo) statKey { return statKey{fi.Size(), fi.ModTime()} }
