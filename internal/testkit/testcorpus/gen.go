package testcorpus

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// File is one transcript of the self-made corpus.
type File struct {
	Name string // file name, <shape>.jsonl
	Data []byte
}

// Lone UTF-16 surrogates cannot live in a Go string; the generator writes these two private-use runes as the
// escapes \ud83d (a lone high surrogate) and \udc00 (a lone low surrogate), the way JavaScript's JSON.stringify
// writes a string cut in the middle of a surrogate pair.
const (
	loneHigh = '\ue000'
	loneLow  = '\ue001'
)

var selfMade = sync.OnceValue(generate)

// flatName is the self-made transcript in the flat entry shape ({"__id":…,"type":…}, no parent links).
const flatName = "synth-flat.jsonl"

// SelfMadeFiles returns the self-made corpus: transcripts written by this package's generator in every shape the
// real corpus has (headers v1, v2 and v3; flat v1 entries without id/parentId and the flat entry shape whose ids
// are in "__id"; branches; v1 and v3 compactions; base64 images; thinking blocks with signatures; big tool results; CRLF
// line endings; malformed and glued lines; lone surrogates; a session captured mid-run). The output is the same
// on every call and every machine; the caller must not modify it.
func SelfMadeFiles() []File { return selfMade() }

func generate() []File {
	files := []File{
		{"v1-pi.jsonl", genV1()},
		{"v2-hook.jsonl", genV2()},
		{"v3-openclaw.jsonl", genV3()},
		{"v3-crlf.jsonl", genCRLF()},
		{"v3-compactions.jsonl", genCompactions()},
		{"v3-midrun.jsonl", genMidRun()},
	}
	var b bytes.Buffer
	if _, err := synth.Generate(&b, synth.Options{Size: 200_000, Seed: 19, MinResult: 600, MaxResult: 6000,
		MinThinking: 200, MaxThinking: 2000, ImageEvery: 7}); err != nil {
		panic(err) // writing to a bytes.Buffer does not fail
	}
	files = append(files, File{"synth-v3.jsonl", bytes.Clone(b.Bytes())})
	b.Reset()
	if _, err := synth.Generate(&b, synth.Options{Size: 80_000, Seed: 20, MinResult: 300, MaxResult: 4000,
		MinThinking: 200, MaxThinking: 1500, Flat: true}); err != nil {
		panic(err)
	}
	files = append(files, File{flatName, bytes.Clone(b.Bytes())})
	return files
}

// writer builds one transcript. Entries are written with keys in the host's order and strings escaped the way
// JSON.stringify escapes them.
type writer struct {
	b       bytes.Buffer
	rng     *rand.Rand
	t       time.Time
	eol     string
	v1      bool   // no id/parentId
	leaf    string // id of the last entry written (v2/v3)
	entries int    // entries written, header included (v1 compaction index)
	ctx     int    // bytes of context so far, for plausible usage
	model   [3]string
	calls   int
}

func newWriter(seed uint64, start string) *writer {
	t, err := time.Parse(time.RFC3339, start)
	if err != nil {
		panic(err)
	}
	return &writer{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), t: t, eol: "\n",
		model: [3]string{"anthropic-messages", "anthropic", "claude-sonnet-4-5"}}
}

func (w *writer) ts() string {
	w.t = w.t.Add(time.Duration(1+w.rng.IntN(40)) * time.Second)
	return bs.FormatTimestamp(w.t)
}

func (w *writer) ms() string { return strconv.FormatInt(w.t.UnixMilli(), 10) }

func (w *writer) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[w.rng.IntN(16)]
	}
	return string(b)
}

func (w *writer) uuid() string {
	return w.hex(8) + "-" + w.hex(4) + "-4" + w.hex(3) + "-a" + w.hex(3) + "-" + w.hex(12)
}

// line writes one line as it is.
func (w *writer) line(s string) {
	w.b.WriteString(s)
	w.b.WriteString(w.eol)
}

// obj joins key/raw-value pairs into a JSON object.
func obj(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(js(kv[i]))
		b.WriteByte(':')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func arr(items ...string) string { return "[" + strings.Join(items, ",") + "]" }

func num(n int) string { return strconv.Itoa(n) }

// js quotes s as JSON.stringify does: only '"', '\\' and control characters are escaped, everything else is
// written as UTF-8, and the two marker runes become lone surrogate escapes.
func js(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == loneHigh:
			b.WriteString(`\ud83d`)
		case r == loneLow:
			b.WriteString(`\udc00`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// entry writes an entry of type typ: v1 entries have no id/parentId, v2/v3 ones hang off parent ("" = the
// current leaf, "-" = no parent) and become the leaf. It returns the entry's id ("" in v1).
func (w *writer) entry(typ, parent string, fields ...string) string {
	kv := []string{"type", js(typ)}
	id := ""
	if !w.v1 {
		id = w.hex(8)
		p := "null"
		switch parent {
		case "":
			if w.leaf != "" {
				p = js(w.leaf)
			}
		case "-":
		default:
			p = js(parent)
		}
		kv = append(kv, "id", js(id), "parentId", p)
		w.leaf = id
	}
	kv = append(kv, "timestamp", js(w.ts()))
	kv = append(kv, fields...)
	w.line(obj(kv...))
	w.entries++
	return id
}

// customEntry writes an OpenClaw state entry, whose data follows its customType and whose envelope keys come
// last, as OpenClaw writes them.
func (w *writer) custom(customType, data string) string {
	id := w.hex(8)
	p := "null"
	if w.leaf != "" {
		p = js(w.leaf)
	}
	w.leaf = id
	w.line(obj("type", js("custom"), "customType", js(customType), "data", data, "id", js(id), "parentId", p, "timestamp", js(w.ts())))
	w.entries++
	return id
}

func (w *writer) message(parent, msg string) string {
	w.ctx += len(msg)
	return w.entry("message", parent, "message", msg)
}

// Content blocks.

func text(s string) string { return obj("type", js("text"), "text", js(s)) }

func thinking(s, sig string) string {
	return obj("type", js("thinking"), "thinking", js(s), "thinkingSignature", js(sig))
}

func image(mime, data string) string {
	return obj("type", js("image"), "data", js(data), "mimeType", js(mime))
}

func (w *writer) toolCall(name, args string) (string, string) {
	w.calls++
	id := "toolu_01" + w.hex(22)
	if w.model[0] != "anthropic-messages" {
		id = "call_" + w.hex(24)
	}
	return id, obj("type", js("toolCall"), "id", js(id), "name", js(name), "arguments", args)
}

func (w *writer) user(parent, s string) string {
	return w.message(parent, obj("role", js("user"), "content", arr(text(s)), "timestamp", w.ms()))
}

func (w *writer) usage(out int) string {
	in := 900 + w.ctx/4
	cache := 0
	if w.rng.IntN(2) == 0 {
		cache, in = in*3/4, in-in*3/4
	}
	zero := obj("input", "0", "output", "0", "cacheRead", "0", "cacheWrite", "0", "total", "0")
	if w.v1 && w.rng.IntN(3) == 0 {
		// Older pi versions wrote no totalTokens.
		return obj("input", num(in), "output", num(out), "cacheRead", num(cache), "cacheWrite", "0", "cost", zero)
	}
	return obj("input", num(in), "output", num(out), "cacheRead", num(cache), "cacheWrite", "0",
		"totalTokens", num(in+out+cache), "cost", zero)
}

// assistant writes an assistant message of blocks ending with stop.
func (w *writer) assistant(parent, stop string, blocks ...string) string {
	n := 0
	for _, b := range blocks {
		n += len(b)
	}
	msg := obj("role", js("assistant"), "content", arr(blocks...), "api", js(w.model[0]), "provider", js(w.model[1]),
		"model", js(w.model[2]), "usage", w.usage(5+n/4), "stopReason", js(stop), "timestamp", w.ms())
	return w.message(parent, msg)
}

// failed writes an assistant turn that ended in an error or was aborted, with empty content.
func (w *writer) failed(parent, stop, errMsg string) string {
	zero := obj("input", "0", "output", "0", "cacheRead", "0", "cacheWrite", "0", "totalTokens", "0",
		"cost", obj("input", "0", "output", "0", "cacheRead", "0", "cacheWrite", "0", "total", "0"))
	msg := obj("role", js("assistant"), "content", "[]", "api", js(w.model[0]), "provider", js(w.model[1]),
		"model", js(w.model[2]), "usage", zero, "stopReason", js(stop), "timestamp", w.ms(), "errorMessage", js(errMsg))
	return w.message(parent, msg)
}

// transcriptOnly writes an OpenClaw transcript-only assistant (delivery-mirror, gateway-injected).
func (w *writer) transcriptOnly(parent, model, s string) string {
	zero := obj("input", "0", "output", "0", "cacheRead", "0", "cacheWrite", "0", "totalTokens", "0",
		"cost", obj("input", "0", "output", "0", "cacheRead", "0", "cacheWrite", "0", "total", "0"))
	msg := obj("role", js("assistant"), "content", arr(text(s)), "api", js("openai-responses"), "provider", js("openclaw"),
		"model", js(model), "usage", zero, "stopReason", js("stop"), "timestamp", w.ms())
	return w.message(parent, msg)
}

func (w *writer) toolResult(parent, callID, name string, blocks []string, details string) string {
	kv := []string{"role", js("toolResult"), "toolCallId", js(callID), "toolName", js(name), "content", arr(blocks...)}
	if details != "" {
		kv = append(kv, "details", details)
	}
	kv = append(kv, "isError", "false", "timestamp", w.ms())
	return w.message(parent, obj(kv...))
}

// Text.

var words = strings.Fields(`the build failed because a test read a file that was not there so we looked at the
log again and found the path was relative to the wrong directory after the change to the loader we moved the
config into one place and wrote a small check that runs before anything else starts then the server came up and
answered every request in time except the one that needed the cache which was still cold`)

var extras = []string{"naïve", "café", "déjà vu", "日本語のテキスト", "中文内容", "emoji 🎉", "Größe", "→", "ß", "🙂"}

// prose returns about n bytes of text; unicode mixes in non-ASCII words.
func (w *writer) prose(n int, unicode bool) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			if w.rng.IntN(12) == 0 {
				b.WriteString(".\n")
			} else {
				b.WriteByte(' ')
			}
		}
		if unicode && w.rng.IntN(15) == 0 {
			b.WriteString(extras[w.rng.IntN(len(extras))])
		} else {
			b.WriteString(words[w.rng.IntN(len(words))])
		}
	}
	return b.String()
}

// output returns about n bytes of tool output: numbered lines, tabs, quotes and backslashes.
func (w *writer) output(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		switch w.rng.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "%5d\t%s\n", i, w.prose(40+w.rng.IntN(60), false))
		case 1:
			fmt.Fprintf(&b, "src/pkg%d/file_%d.go:%d: \"%s\" \\ %s\n", i%7, i, 10+i, w.hex(6), w.prose(30, false))
		case 2:
			fmt.Fprintf(&b, "-rw-r--r--  1 user  staff  %6d Mar  %d 10:%02d %s.txt\n", w.rng.IntN(100000), 1+i%28, i%60, w.hex(5))
		default:
			fmt.Fprintf(&b, "{\"step\": %d, \"ok\": %t, \"note\": \"%s\"}\n", i, i%3 != 0, w.prose(30, false))
		}
	}
	s := b.String()
	for len(s) > n && n > 0 {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// imageData returns the base64 of n bytes of a PNG (or JPEG) look-alike: the right magic, then noise.
func (w *writer) imageData(mime string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(w.rng.IntN(256))
	}
	if mime == "image/png" {
		copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	} else {
		copy(b, "\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	}
	return base64.StdEncoding.EncodeToString(b)
}

// turn writes a user prompt, tool calls with their results, and a final answer, and returns the id of the
// answer. think adds a thinking block to each assistant message; results gives the size of each tool result.
func (w *writer) turn(think bool, results ...int) string {
	w.user("", w.prose(60+w.rng.IntN(300), true))
	for _, size := range results {
		var blocks []string
		if think {
			blocks = append(blocks, thinking(w.prose(300+w.rng.IntN(900), true), w.hex(120)))
		}
		name := []string{"bash", "read", "exec"}[w.rng.IntN(3)]
		id, call := w.toolCall(name, obj("command", js("cat "+w.hex(6)+".log | head -n "+num(size/40))))
		blocks = append(blocks, call)
		w.assistant("", "toolUse", blocks...)
		w.toolResult("", id, name, []string{text(w.output(size))}, "")
	}
	var blocks []string
	if think {
		blocks = append(blocks, thinking(w.prose(200+w.rng.IntN(700), true), w.hex(80)))
	}
	blocks = append(blocks, text(w.prose(100+w.rng.IntN(600), true)))
	return w.assistant("", "stop", blocks...)
}

// genV1 is a pi v1 session (no version, no id/parentId): legacy header keys, thinking level and model changes,
// thinking with signatures, a bashExecution message, an aborted turn, a tool result with an image, a big tool
// result, a v1 compaction (firstKeptEntryIndex), a glued line in the middle and a glued last line.
func genV1() []byte {
	w := newWriter(1, "2025-12-09T00:53:29Z")
	w.v1 = true
	w.line(obj("type", js("session"), "id", js(w.uuid()), "timestamp", js(w.ts()), "cwd", js("/home/user/project"),
		"provider", js("anthropic"), "modelId", js("claude-sonnet-4-5"), "thinkingLevel", js("off")))
	w.entries++
	w.turn(false, 1200, 700)
	w.entry("thinking_level_change", "", "thinkingLevel", js("medium"))
	w.turn(true, 2500)
	w.message("", obj("role", js("bashExecution"), "command", js("ls -la"), "output", js(w.output(1800)), "exitCode", "0",
		"cancelled", "false", "truncated", "false", "timestamp", w.ms()))
	w.turn(true, 900, 60_000)
	// An aborted turn, and one aborted while a tool call was streamed (its partialJson left behind).
	w.user("", w.prose(120, false))
	w.failed("", "aborted", "Request was aborted.")
	w.user("", w.prose(90, false))
	w.assistant("", "aborted", obj("type", js("toolCall"), "id", js("toolu_01"+w.hex(22)), "name", js("read"),
		"arguments", obj("path", js("/home/user/project/src")), "partialJson", js(`{"path": "/home/user/project/src`)))
	// A tool result with an image.
	w.user("", "look at the screenshot")
	id, call := w.toolCall("read", obj("path", js("/home/user/project/shot.png")))
	w.assistant("", "toolUse", call)
	w.toolResult("", id, "read", []string{text("Read image file [image/png]"), image("image/png", w.imageData("image/png", 4000))}, "")
	w.assistant("", "stop", text(w.prose(300, false)))
	kept := w.entries
	w.turn(true, 1500)
	// Two entries glued on one line (a writer that lost its newline).
	w.eol = ""
	w.user("", w.prose(80, false))
	w.eol = "\n"
	w.assistant("", "stop", text(w.prose(400, true)))
	w.turn(false, 800)
	w.entry("compaction", "", "summary", js("## Goal\n"+w.prose(1400, true)), "firstKeptEntryIndex", num(kept),
		"tokensBefore", num(900+w.ctx/4))
	w.entry("model_change", "", "provider", js("anthropic"), "modelId", js("claude-opus-4-5"))
	w.model[2] = "claude-opus-4-5"
	w.turn(true, 3000, 700)
	w.turn(false, 1100)
	// The last line: two entries glued, as in pi's own corpus.
	w.eol = ""
	w.user("", w.prose(90, false))
	w.eol = "\n"
	w.assistant("", "stop", text(w.prose(250, false)))
	return w.b.Bytes()
}

// genV2 is a version 2 session: id/parentId entries, a hookMessage (the v2 name of role custom), thinking and a
// v2 compaction (firstKeptEntryId).
func genV2() []byte {
	w := newWriter(2, "2026-01-10T08:00:00Z")
	w.line(obj("type", js("session"), "version", "2", "id", js(w.uuid()), "timestamp", js(w.ts()), "cwd", js("/home/user/app")))
	w.entries++
	w.entry("model_change", "-", "provider", js("anthropic"), "modelId", js("claude-sonnet-4-5"))
	w.entry("thinking_level_change", "", "thinkingLevel", js("low"))
	w.turn(true, 1400)
	w.message("", obj("role", js("hookMessage"), "customType", js("reminder"), "content", js(w.prose(700, false)),
		"display", "true", "timestamp", w.ms()))
	w.turn(true, 2200, 600)
	keep := w.user("", w.prose(200, true))
	w.assistant("", "stop", thinking(w.prose(800, false), w.hex(100)), text(w.prose(500, false)))
	w.turn(false, 5000)
	w.entry("compaction", "", "summary", js(w.prose(1200, false)), "firstKeptEntryId", js(keep), "tokensBefore", num(900+w.ctx/4))
	w.turn(true, 1700)
	return w.b.Bytes()
}

// genV3 is an OpenClaw v3 session with everything at once: model snapshot and runtime-context customs, thinking
// with signatures, tool results with details and images, a big tool result, a delivery-mirror sibling (a branch),
// an error turn with its prompt-error custom, a gateway-injected assistant, lone and paired surrogates, two
// compactions, a malformed line and a glued line.
func genV3() []byte {
	w := newWriter(3, "2026-03-29T08:44:52Z")
	w.model = [3]string{"openai-completions", "custom-provider", "glm-5-turbo"}
	w.line(obj("type", js("session"), "version", "3", "id", js(w.uuid()), "timestamp", js(w.ts()), "cwd", js("/home/user/.openclaw/workspace")))
	w.entries++
	w.entry("model_change", "-", "provider", js("custom-provider"), "modelId", js("glm-5-turbo"))
	w.entry("thinking_level_change", "", "thinkingLevel", js("off"))
	w.custom("model-snapshot", obj("timestamp", w.ms(), "provider", js("custom-provider"), "modelApi", js("openai-completions"), "modelId", js("glm-5-turbo")))
	w.custom("openclaw:bootstrap-context:full", obj("timestamp", w.ms(), "runId", js(w.uuid()), "sessionId", js(w.uuid())))
	runtime := func() {
		w.entry("custom_message", "", "customType", js("openclaw.runtime-context"), "content", js("OpenClaw runtime context for the immediately preceding user message. "+w.prose(300, false)),
			"display", "false", "details", obj("source", js("openclaw-runtime-context")))
	}
	w.turn(true, 1800, 900)
	// Surrogates: a lone high one in a prompt, a lone low one in a tool result, a pair written as escapes.
	w.user("", "cut emoji here: "+string(loneHigh)+" and a whole one: 🎉 "+w.prose(120, false))
	runtime()
	id, call := w.toolCall("exec", obj("command", js("printf 'broken'"), "timeout", "30"))
	w.assistant("", "toolUse", thinking(w.prose(700, true), "reasoning_content"), call)
	w.toolResult("", id, "exec", []string{text(string(loneLow) + " stray low half; " + w.output(1500))},
		obj("status", js("completed"), "exitCode", "0", "durationMs", "412", "aggregated", js(w.output(900))))
	w.line(strings.Replace(obj("type", js("message"), "id", js(w.hex(8)), "parentId", js(w.leaf), "timestamp", js(w.ts()),
		"message", obj("role", js("assistant"), "content", arr(text("pair: PAIR "+w.prose(300, false))), "api", js(w.model[0]),
			"provider", js(w.model[1]), "model", js(w.model[2]), "usage", w.usage(90), "stopReason", js("stop"), "timestamp", w.ms())),
		"PAIR", `\ud83d\ude00`, 1))
	w.entries++
	w.leaf = lastID(w)
	w.entry("custom_message", "", "customType", js("openclaw.runtime-context"), "content", js("heartbeat "+w.prose(100, false)),
		"display", "false", "details", obj("source", js("openclaw-runtime-context")))
	// Images in a tool result.
	w.user("", "what is in the picture?")
	id, call = w.toolCall("read", obj("path", js("/tmp/photo.jpg")))
	w.assistant("", "toolUse", call)
	w.toolResult("", id, "read", []string{text("Read image file [image/jpeg]"), image("image/jpeg", w.imageData("image/jpeg", 6000))}, "")
	w.assistant("", "stop", thinking(w.prose(600, true), "reasoning_content"), text(w.prose(400, true)))
	// A branch: a delivery mirror appended as a sibling of a tool result by a concurrent writer.
	w.user("", w.prose(150, true))
	id, call = w.toolCall("exec", obj("command", js("du -sh *"), "timeout", "30"))
	callEntry := w.assistant("", "toolUse", call)
	result := w.toolResult("", id, "exec", []string{text(w.output(2600))}, obj("status", js("completed"), "exitCode", "0"))
	w.transcriptOnly(callEntry, "delivery-mirror", w.prose(200, true))
	w.leaf = result
	w.assistant("", "stop", text(w.prose(700, true)))
	keep := w.user("", w.prose(200, false))
	w.turn(true, 3200)
	// A big tool result.
	w.turn(false, 100_000)
	w.entry("compaction", "", "summary", js("## Goal\n"+w.prose(2000, true)), "firstKeptEntryId", js(keep),
		"tokensBefore", num(900+w.ctx/4), "details", obj("readFiles", arr(js("/tmp/a.txt"), js("/tmp/b.txt")), "modifiedFiles", arr(js("/tmp/c.txt"))), "fromHook", "true")
	w.ctx /= 4
	// An error turn and its prompt-error custom.
	w.user("", w.prose(100, false))
	w.failed("", "error", "fetch failed")
	w.custom("openclaw:prompt-error", obj("timestamp", w.ms(), "runId", js(w.uuid()), "sessionId", js(w.uuid()), "provider", js(w.model[1]),
		"model", js(w.model[2]), "api", js(w.model[0]), "error", js("fetch failed")))
	w.transcriptOnly("", "gateway-injected", "⚠️ Agent failed before reply: fetch failed")
	// A malformed line (cut off) and a glued line of two customs; neither is on the path.
	before := w.leaf
	w.line(`{"type":"message","id":"` + w.hex(8) + `","parentId":"` + before + `","timestamp":"` + w.ts() + `","message":{"role":"assistant","content":[{"type":"text","text":"cut off in the mid`)
	w.eol = ""
	w.custom("model-snapshot", obj("timestamp", w.ms(), "provider", js("custom-provider"), "modelApi", js("openai-completions"), "modelId", js("glm-5-turbo")))
	w.eol = "\n"
	w.custom("model-snapshot", obj("timestamp", w.ms(), "provider", js("custom-provider"), "modelApi", js("openai-completions"), "modelId", js("glm-5-turbo")))
	w.leaf = before
	w.turn(true, 2100, 1300)
	keep2 := w.user("", w.prose(180, true))
	runtime()
	w.assistant("", "stop", text(w.prose(900, true)))
	w.turn(true, 2700)
	w.entry("compaction", "", "summary", js("## Goal\n"+w.prose(1500, true)), "firstKeptEntryId", js(keep2),
		"tokensBefore", num(900+w.ctx/4), "details", obj("readFiles", "[]", "modifiedFiles", "[]"))
	w.turn(true, 1600, 800)
	return w.b.Bytes()
}

// lastID returns the id of the last line written.
func lastID(w *writer) string {
	b := bytes.TrimRight(w.b.Bytes(), "\r\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	_, after, _ := bytes.Cut(b, []byte(`"id":"`))
	id, _, _ := bytes.Cut(after, []byte(`"`))
	return string(id)
}

// genCRLF is a v3 session written with CRLF line endings (a transcript edited on Windows).
func genCRLF() []byte {
	w := newWriter(4, "2026-03-04T01:35:58Z")
	w.eol = "\r\n"
	w.model = [3]string{"openai-completions", "deepseek", "deepseek-chat"}
	w.line(obj("type", js("session"), "version", "3", "id", js(w.uuid()), "timestamp", js(w.ts()), "cwd", js(`C:\Users\user\.openclaw\workspace`)))
	w.entries++
	w.entry("model_change", "-", "provider", js("deepseek"), "modelId", js("deepseek-chat"))
	w.entry("thinking_level_change", "", "thinkingLevel", js("off"))
	w.custom("model-snapshot", obj("timestamp", w.ms(), "provider", js("deepseek"), "modelApi", js("openai-completions"), "modelId", js("deepseek-chat")))
	w.turn(false, 2400, 800)
	keep := w.user("", w.prose(300, true))
	w.assistant("", "stop", text(w.prose(600, false)))
	w.turn(true, 4000)
	w.entry("compaction", "", "summary", js(w.prose(900, false)), "firstKeptEntryId", js(keep), "tokensBefore", num(900+w.ctx/4))
	w.turn(true, 1900, 1200)
	return w.b.Bytes()
}

// genCompactions is a v3 session on a small local model that compacts after nearly every turn: a chain of
// compactions, each keeping from the turn before, with runtime-context custom messages and no tools.
func genCompactions() []byte {
	w := newWriter(5, "2026-05-01T16:27:22Z")
	w.model = [3]string{"ollama", "ollama", "llama3:latest"}
	w.line(obj("type", js("session"), "version", "3", "id", js(w.uuid()), "timestamp", js(w.ts()), "cwd", js("/home/user/.openclaw/workspace")))
	w.entries++
	w.entry("model_change", "-", "provider", js("ollama"), "modelId", js("llama3:latest"))
	w.entry("thinking_level_change", "", "thinkingLevel", js("off"))
	w.custom("model-snapshot", obj("timestamp", w.ms(), "provider", js("ollama"), "modelApi", js("ollama"), "modelId", js("llama3:latest")))
	var prev string
	for i := range 16 {
		u := w.user("", w.prose(100+w.rng.IntN(400), true))
		w.entry("custom_message", "", "customType", js("openclaw.runtime-context"), "content", js("OpenClaw runtime context. "+w.prose(250, false)),
			"display", "false", "details", obj("source", js("openclaw-runtime-context")))
		w.assistant("", "stop", text(w.prose(300+w.rng.IntN(1500), true)))
		if i > 0 {
			w.entry("compaction", "", "summary", js(w.prose(400+w.rng.IntN(400), false)), "firstKeptEntryId", js(prev),
				"tokensBefore", num(900+w.ctx/4), "fromHook", "true")
			w.ctx /= 3
		}
		prev = u
	}
	return w.b.Bytes()
}

// genMidRun is a v3 session captured in the middle of a run: the last entry is an assistant tool call whose
// result has not been written yet.
func genMidRun() []byte {
	w := newWriter(6, "2026-04-05T13:22:54Z")
	w.model = [3]string{"openai-codex-responses", "openai-codex", "gpt-5.5"}
	w.line(obj("type", js("session"), "version", "3", "id", js(w.uuid()), "timestamp", js(w.ts()), "cwd", js("/srv/agent")))
	w.entries++
	w.entry("model_change", "-", "provider", js("openai-codex"), "modelId", js("gpt-5.5"))
	w.entry("thinking_level_change", "", "thinkingLevel", js("medium"))
	w.custom("model-snapshot", obj("timestamp", w.ms(), "provider", js("openai-codex"), "modelApi", js("openai-codex-responses"), "modelId", js("gpt-5.5")))
	w.turn(true, 3500, 1200, 700)
	w.turn(true, 2000)
	w.turn(false, 8000)
	// A text block with its signature (OpenAI Responses).
	w.user("", w.prose(120, false))
	w.assistant("", "stop", thinking(w.prose(500, false), w.hex(300)),
		obj("type", js("text"), "text", js(w.prose(700, true)), "textSignature", js(`{"v":1,"id":"msg_`+w.hex(40)+`"}`)))
	w.user("", w.prose(200, true))
	_, call := w.toolCall("exec", obj("command", js("make test"), "workdir", js("/srv/agent"), "timeout", "600"))
	w.assistant("", "toolUse", thinking(w.prose(900, true), w.hex(200)), call)
	return w.b.Bytes()
}
