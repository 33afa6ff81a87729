package tokens

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzDecode checks the JSON string decoder against encoding/json.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"c\"\\d\/e"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d x"`, `"\udc00"`, `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var want string
		if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' || json.Unmarshal([]byte(q), &want) != nil || !utf8.ValidString(q) {
			return
		}
		if got := string(decode([]byte(q))); got != want {
			t.Errorf("decode(%q) = %q, want %q", q, got, want)
		}
	})
}
