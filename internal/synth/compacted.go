package synth

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// CompactedOptions shape the transcript [Compacted] writes.
type CompactedOptions struct {
	// Size is the target size in bytes; generation stops after the first
	// turn that reaches it.
	Size int64
	// HeaderID is the session header's id (default "bench").
	HeaderID string
	// Usage makes each assistant message record its model and usage, the
	// context growing by 5,000 tokens a turn from 3,000 and starting again
	// at 13,000 after a compaction, whose tokensBefore is then the context
	// it replaced; without it no usage is recorded and every compaction
	// says tokensBefore 150,000.
	Usage bool
}

// Compacted writes to w a v3 transcript of about o.Size bytes as a
// long-running session compacted by its host looks: tool turns (a user
// message, an assistant tool call, a ~20 KB tool result, an assistant
// answer) with a compaction entry every 50 turns that keeps the last two
// turns. It returns the bytes of the entries written (the header is not
// counted).
func Compacted(w io.Writer, o CompactedOptions) (int64, error) {
	if o.HeaderID == "" {
		o.HeaderID = "bench"
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var written int64
	n, parent := 0, ""
	line := func(typ, body string) string {
		n++
		id := fmt.Sprintf("%08x", uint32(n)*2654435761)
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		s := fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":"2026-03-01T00:00:00.000Z",%s}`+"\n", typ, id, p, body)
		written += int64(len(s))
		bw.WriteString(s) // a write error stays in bw and is returned by Flush
		parent = id
		return id
	}
	header := `{"type":"session","version":3,"id":"` + o.HeaderID + `","timestamp":"2026-03-01T00:00:00.000Z","cwd":"/"}` + "\n"
	bw.WriteString(header)
	out := strings.Repeat("output line of a tool, with some text in it\\n", 450) // ~20 KB
	usage := func(ctx int) string {
		if !o.Usage {
			return ""
		}
		return fmt.Sprintf(`,"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":%d,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":%d}`, ctx-20, ctx)
	}
	var starts []string
	ctx := 3000
	for turn := 0; written < o.Size; turn++ {
		starts = append(starts, line("message", `"message":{"role":"user","content":[{"type":"text","text":"please run the next step"}]}`))
		call := fmt.Sprintf("call_%d", turn)
		line("message", fmt.Sprintf(`"message":{"role":"assistant","content":[{"type":"toolCall","id":%q,"name":"exec","arguments":{"command":"make"}}]%s}`, call, usage(ctx)))
		line("message", fmt.Sprintf(`"message":{"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":"%s"}]}`, call, out))
		ctx += 5000
		line("message", fmt.Sprintf(`"message":{"role":"assistant","content":[{"type":"text","text":"done"}]%s}`, usage(ctx)))
		if turn%50 == 49 {
			before := 150000
			if o.Usage {
				before = ctx
			}
			line("compaction", fmt.Sprintf(`"summary":"summary of the work so far","firstKeptEntryId":%q,"tokensBefore":%d,"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false`, starts[len(starts)-2], before))
			ctx = 13000
		}
	}
	return written, bw.Flush()
}
