package restore

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// MatchKey reports whether a restore key names the stored value at the
// JSON Pointer path. The rule (see the package documentation): a key is a
// run of path segments ("/"-separated, RFC 6901 escapes allowed, one
// leading "/" ignored); it matches when its segments occur consecutively
// in the value's path. So the full pointer ("/message/content/2/text"),
// the pointer without its "/", a top-level member ("message", "output"), a
// member anywhere on the path ("content", "details", "arguments"), the
// last segment ("text", "thinking", "command") and a block path
// ("content/2") all match. A key made of digits only names a content block
// index: "2" matches /message/content/2/… and /content/2/…, not other
// array indexes. Matching is case-sensitive.
func MatchKey(key, path string) bool {
	k := strings.TrimPrefix(key, "/")
	if k == "" {
		return false
	}
	ks, err := jsonedit.SplitPointer("/" + k)
	if err != nil {
		return false
	}
	ps, err := jsonedit.SplitPointer(path)
	if err != nil {
		return false
	}
	if len(ks) == 1 && isDigits(ks[0]) {
		for i := 0; i+1 < len(ps); i++ {
			if ps[i] == "content" && ps[i+1] == ks[0] && (i == 0 || (i == 1 && ps[0] == "message")) {
				return true
			}
		}
		return false
	}
	for i := 0; i+len(ks) <= len(ps); i++ {
		match := true
		for j := range ks {
			if ps[i+j] != ks[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// SplitKeys splits keys given as comma-separated lists ("content,output")
// and drops empty items and surrounding spaces.
func SplitKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !strings.Contains(k, ",") {
			if k = strings.TrimSpace(k); k != "" {
				out = append(out, k)
			}
			continue
		}
		for _, part := range strings.Split(k, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// checkKeys validates user-given keys: every segment that comes from a user
// is checked before use.
func checkKeys(keys []string) error {
	for _, k := range keys {
		switch {
		case strings.TrimPrefix(k, "/") == "":
			return fmt.Errorf("restore key %q is empty: %w", k, bs.ErrInvalid)
		case len(k) > 512:
			return fmt.Errorf("restore key %.40q… is longer than 512 bytes: %w", k, bs.ErrInvalid)
		case !utf8.ValidString(k) || strings.ContainsRune(k, 0):
			return fmt.Errorf("restore key %q is not valid text: %w", k, bs.ErrInvalid)
		}
	}
	return nil
}

// selectValues returns the values matched by keys (all of them when keys
// is empty) and the keys that matched nothing.
func selectValues(vals []extract.StoredValue, keys []string) (sel []extract.StoredValue, unknown []string) {
	if len(keys) == 0 {
		return vals, nil
	}
	hit := make([]bool, len(keys))
	for _, v := range vals {
		for i, k := range keys {
			if MatchKey(k, v.Path) {
				hit[i] = true
				sel = append(sel, v)
				break
			}
		}
	}
	for i, k := range keys {
		if !hit[i] {
			unknown = append(unknown, k)
		}
	}
	return sel, unknown
}

// unknownKeys is the error for keys that match no stored value.
func unknownKeys(id string, unknown []string, vals []extract.StoredValue) error {
	q := make([]string, len(unknown))
	for i, k := range unknown {
		q[i] = fmt.Sprintf("%q", k)
	}
	have := make([]string, 0, len(vals))
	for _, v := range vals {
		have = append(have, v.Path)
	}
	sort.Strings(have)
	return fmt.Errorf("entry %s: no extracted value matches key %s; its keys are %s (a key may be the full path, any run of its segments such as \"text\" or \"content/2\", or a block index): %w",
		id, strings.Join(q, ", "), strings.Join(have, ", "), bs.ErrNotFound)
}
