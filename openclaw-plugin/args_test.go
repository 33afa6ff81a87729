package openclawplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// Which tool-call arguments OpenClaw masks, ported from its source as data. OpenClaw stores every message through
// redactTranscriptMessage (src/agents/transcript-redact.ts: dist/transcript-redact-CcOcbRyc.mjs in 2026.9.6,
// dist/session-accessor-ZRcpGzx8.js in 2026.7.35), which gives each string member, a tool call's arguments
// included, to redactSensitiveFieldValueWithConfig (src/logging/redact.ts: dist/redact-B5EGyLvV.mjs,
// dist/redact-B9QQ4Wyz.js). When isSensitiveFieldKey(name) holds, that is STRUCTURED_SECRET_FIELD_RE or
// STRUCTURED_SECRET_ENV_FIELD_RE matches the member's name, the value is stored masked (maskToken: "***" below 18
// characters, else its first 6 and last 4 characters around "…"), in the row and in every later request. The two
// patterns below are 2026.9.6's, which adds the AWS names to 2026.7.35's; PAYMENT_CREDENTIAL_* are inlined.
var (
	hostSecretField = regexp.MustCompile(`(?i)^(?:api[-_]?key|apiKey|api[-_]?token|apiToken|bearer[-_]?token|bearerToken|token|secret|password|passwd|` +
		`aws[-_]?secret[-_]?access[-_]?key|awsSecretAccessKey|SecretAccessKey|credential|authorization|private[-_]?key|privateKey|` +
		`access[-_]?token|accessToken|refresh[-_]?token|refreshToken|id[-_]?token|idToken|auth[-_]?token|authToken|client[-_]?secret|` +
		`clientSecret|app[-_]?secret|appSecret|secret[-_]?value|secretValue|raw[-_]?secret|rawSecret|secret[-_]?input|secretInput|key|` +
		`key[-_]?material|keyMaterial|jwt|session|signature|cookie|set[-_]?cookie|` +
		`card[-_]?number|card[-_]?cvc|card[-_]?cvv|cvc|cvv|security[-_]?code|payment[-_]?credential|shared[-_]?payment[-_]?token|` +
		`cardNumber|card_number|cardCvc|card_cvc|cardCvv|card_cvv|cvc|cvv|securityCode|security_code|paymentCredential|` +
		`payment_credential|sharedPaymentToken|shared_payment_token)$`)
	hostSecretEnvField = regexp.MustCompile(`(?i)^(?:(?:[A-Z0-9]+[_-])+(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)|API[_-]?KEY|TOKEN|SECRET|PASSWORD|PASSWD|` +
		`CARD[_-]?NUMBER|CARD[_-]?CVC|CARD[_-]?CVV|CVC|CVV|SECURITY[_-]?CODE|PAYMENT[_-]?CREDENTIAL|SHARED[_-]?PAYMENT[_-]?TOKEN)$`)
)

// hostMasks reports whether OpenClaw stores a tool-call argument of this name masked (its isSensitiveFieldKey).
func hostMasks(name string) bool {
	return hostSecretField.MatchString(name) || hostSecretEnvField.MatchString(name)
}

// toolArguments returns the argument names of each tool as the plugin declares them (node imports index.js), and
// the old names it still accepts.
func toolArguments(t *testing.T) (args, old map[string][]string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if oracle.Required() {
			t.Fatalf("node is not on PATH (CI demands it): the plugin's tool specs cannot be read: %v", err)
		}
		t.Skipf("node is not on PATH: the plugin's tool specs cannot be read: %v", err)
	}
	const script = `const m = await import(process.argv[1]);
const args = {};
for (const name of m.TOOL_NAMES) args[name] = Object.keys(m.makeTool(name, m.resolveConfig({}), {}).parameters.properties);
console.log(JSON.stringify({ args, old: m.OLD_ARGUMENT_NAMES }));`
	abs, err := filepath.Abs("index.js")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, "--input-type=module", "-e", script, "file://"+abs).Output()
	if err != nil {
		t.Fatalf("node reading the tool specs: %v", err)
	}
	var got struct{ Args, Old map[string][]string }
	if err := json.Unmarshal(out, &got); err != nil || len(got.Args) == 0 {
		t.Fatalf("node answered %q: %v", out, err)
	}
	return got.Args, got.Old
}

// TestToolArgumentsSurviveHostMasking checks that no argument of the plugin's tools is named so that OpenClaw masks
// it in its transcript (the agent's history must say which value it restored), and that each old name the plugin
// still accepts is one the host masks (the reason it was renamed) and is no longer declared.
func TestToolArgumentsSurviveHostMasking(t *testing.T) {
	args, old := toolArguments(t)
	for _, tool := range []string{"purge_control", "recall_grep", "recall_describe", "recall_expand"} {
		if len(args[tool]) == 0 {
			t.Errorf("%s: no arguments read from the spec", tool)
		}
		for _, name := range args[tool] {
			t.Run(tool+"."+name, func(t *testing.T) {
				if hostMasks(name) {
					t.Errorf("OpenClaw stores the argument %s of %s as *** (its isSensitiveFieldKey matches): rename it", name, tool)
				}
			})
		}
		for _, name := range old[tool] {
			if !hostMasks(name) || slices.Contains(args[tool], name) {
				t.Errorf("%s: old argument name %s: masked by the host %v, still declared %v; want masked and not declared", tool, name, hostMasks(name), slices.Contains(args[tool], name))
			}
		}
	}
	if !slices.Contains(args["purge_control"], "value_id") || !slices.Contains(old["purge_control"], "key") {
		t.Errorf("purge_control declares %v and accepts the old names %v; want value_id, and key accepted", args["purge_control"], old["purge_control"])
	}
}

// hostMaskingCases are argument names with what OpenClaw does to them, from running its redactTranscriptMessage.
var hostMaskingCases = []struct {
	name   string
	masked bool
}{
	{"key", true}, {"Key", true}, {"keys", false}, {"value_id", false}, {"value", false}, {"id", false},
	{"session", true}, {"session_key", true}, {"sessionKey", false}, {"session_id", false},
	{"token", true}, {"max_token", true}, {"max_tokens", false}, {"apiKey", true}, {"api_key", true},
	{"password", true}, {"secret", true}, {"signature", true}, {"pointers", false}, {"entry_id", false},
	{"action", false}, {"offset", false}, {"max_chars", false}, {"pattern", false}, {"in", false},
}

// TestHostMaskingPort checks the port of OpenClaw's rule on names it masks and names it keeps; when OpenClaw's
// releases are installed (bash .ci/install-openclaw.sh), it also runs their own redactTranscriptMessage on a
// stored tool call holding these names and the plugin's argument names, and checks that the port agrees.
func TestHostMaskingPort(t *testing.T) {
	for _, tc := range hostMaskingCases {
		if got := hostMasks(tc.name); got != tc.masked {
			t.Errorf("hostMasks(%q) = %v, want %v", tc.name, got, tc.masked)
		}
	}
	names := []string{}
	for _, tc := range hostMaskingCases {
		names = append(names, tc.name)
	}
	if _, err := exec.LookPath("node"); err == nil {
		args, old := toolArguments(t)
		for _, tool := range slices.Sorted(maps.Keys(args)) {
			names = append(names, args[tool]...)
			names = append(names, old[tool]...)
		}
	}
	for _, v := range []string{openclaw.V9, openclaw.V7} {
		t.Run(v, func(t *testing.T) {
			if testing.Short() {
				t.Skip("-short: OpenClaw's own rule is not run (importing it takes seconds)")
			}
			in, err := openclaw.Locate(v)
			if err != nil {
				if oracle.Required() {
					t.Fatalf("OpenClaw %s is not installed (CI demands it: bash .ci/install-openclaw.sh): %v", v, err)
				}
				t.Skipf("OpenClaw %s is not installed: %v", v, err)
			}
			masked := hostMasked(t, in, names)
			for _, n := range names {
				if masked[n] != hostMasks(n) {
					t.Errorf("%s: OpenClaw %s masks %v, the port says %v", n, v, masked[n], hostMasks(n))
				}
			}
		})
	}
}

// redactTranscriptExportRE finds, in the export statement of the file of OpenClaw's dist that defines
// redactTranscriptMessage, the name it is exported under.
var redactTranscriptExportRE = regexp.MustCompile(`\bredactTranscriptMessage(?: as (\w+))?\s*[,}]`)

// hostMasked runs the install's redactTranscriptMessage on an assistant message whose tool call has an argument
// of each name (the value "tc-call_1") and reports which came back changed.
func hostMasked(t *testing.T, in openclaw.Install, names []string) map[string]bool {
	t.Helper()
	var file, export string
	for _, pat := range []string{"*.mjs", "*.js"} {
		files, _ := filepath.Glob(filepath.Join(in.Package, "dist", pat))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil || !bytes.Contains(b, []byte("function redactTranscriptMessage(")) {
				continue
			}
			last := b[bytes.LastIndex(b, []byte("export {")):]
			if m := redactTranscriptExportRE.FindSubmatch(last); m != nil {
				file, export = f, string(m[1])
				if export == "" {
					export = "redactTranscriptMessage"
				}
			}
		}
	}
	if file == "" {
		t.Fatalf("OpenClaw %s: no file of %s/dist exports redactTranscriptMessage", in.Version, in.Package)
	}
	const script = `const [file, name, names] = process.argv.slice(1);
const redact = (await import(file))[name];
const args = Object.fromEntries(JSON.parse(names).map((n) => [n, "tc-call_1"]));
const out = redact({ role: "assistant", content: [{ type: "toolCall", id: "call_1", name: "purge_control", arguments: args }], timestamp: 1 }, {});
const got = out.content[0].arguments;
console.log(JSON.stringify(Object.fromEntries(Object.keys(args).map((n) => [n, got[n] !== args[n]]))));`
	nb, _ := json.Marshal(names)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, in.Node, "--input-type=module", "-e", script, "file://"+file, export, string(nb)).Output()
	if err != nil {
		t.Fatalf("OpenClaw %s: running redactTranscriptMessage of %s: %v", in.Version, file, err)
	}
	var masked map[string]bool
	if err := json.Unmarshal(out, &masked); err != nil {
		t.Fatalf("OpenClaw %s: node answered %q: %v", in.Version, out, err)
	}
	return masked
}
