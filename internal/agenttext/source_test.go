package agenttext_test

import (
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
)

// TestLiteralRuneRoundTrip reads literal bodies a character at a time and
// writes them back as JSON.stringify writes them: its canonical escapes
// come back as they are, other spellings in JSON.stringify's.
func TestLiteralRuneRoundTrip(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`abc`, `abc`},
		{`a\nb\"c\\d\/e\t\b\f\r`, `a\nb\"c\\d/e\t\b\f\r`},
		{`\u0041\u00e9\u0001\u001F`, `Aé\u0001\u001f`},
		{`\ud83d\ude00\ud83d x\udc00`, `😀\ud83d x\udc00`},
		{`\uD83D\uDE00\uFFFD`, `😀�`},
		{"😀é\u2028<>&", "😀é\u2028<>&"},
		{"\xff", "\uFFFD"},
	} {
		var got []byte
		n := 0
		for i := 0; i < len(tc.body); n++ {
			r, size := agenttext.LiteralRune([]byte(tc.body), i)
			got = agenttext.AppendJSRune(got, r)
			i += size
		}
		if string(got) != tc.want {
			t.Errorf("%s: wrote %s, want %s", tc.body, got, tc.want)
		}
		if c := agenttext.LiteralChars([]byte(tc.body)); c != n {
			t.Errorf("%s: LiteralRune read %d characters, LiteralChars counts %d", tc.body, n, c)
		}
	}
}

func TestShellArgAndJSString(t *testing.T) {
	for _, tc := range []struct{ in, shell, js string }{
		{"main/s-1", "main/s-1", "main/s-1"},
		{"tc-call|fc_1", "'tc-call|fc_1'", "tc-call|fc_1"},
		{"it's $x", `'it'\''s $x'`, "it's $x"},
		{"", "''", ""},
		{"a\"b\\c\n\x7f", "'a\"b\\c\n\x7f'", `a\"b\\c\n` + "\x7f"},
	} {
		if got := agenttext.ShellArg(tc.in); got != tc.shell {
			t.Errorf("ShellArg(%q) = %q, want %q", tc.in, got, tc.shell)
		}
		if got := string(agenttext.AppendJSString(nil, tc.in)); got != tc.js {
			t.Errorf("AppendJSString(%q) = %q, want %q", tc.in, got, tc.js)
		}
	}
}
