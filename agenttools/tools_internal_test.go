package agenttools

import (
	"slices"
	"sort"
	"testing"
)

// TestEverySpecRuns checks that Call runs exactly the tools of Specs.
func TestEverySpecRuns(t *testing.T) {
	var run []string
	for name := range runners {
		run = append(run, name)
	}
	sort.Strings(run)
	names := Names()
	sort.Strings(names)
	if !slices.Equal(run, names) {
		t.Errorf("Call runs %q, Specs has %q: expected a runner for each spec and a spec for each runner", run, names)
	}
}

// TestExpectedTools checks the list of tools an error names.
func TestExpectedTools(t *testing.T) {
	if got, want := ExpectedTools(), "purge_control, recall_grep, recall_describe or recall_expand"; got != want {
		t.Errorf("ExpectedTools() = %q, want %q", got, want)
	}
}

// TestIntParam reads integers as a number or a string of digits.
func TestIntParam(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
		err  bool
	}{
		{"", 7, false}, {"null", 7, false}, {"12", 12, false}, {`"12"`, 12, false}, {`" 3 "`, 3, false},
		{"1e3", 1000, false}, {"1.5", 0, true}, {`"x"`, 0, true}, {"true", 0, true}, {"1e300", 0, true},
	} {
		got, err := intParam("offset", []byte(tc.raw), 7)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("intParam(%s) = %d, %v; want %d, error %v", tc.raw, got, err, tc.want, tc.err)
		}
	}
}

// TestValueID takes value_id or its old name key, never two different ones.
func TestValueID(t *testing.T) {
	for _, tc := range []struct {
		id, old, want string
		err           bool
	}{
		{"a", "", "a", false}, {"", "a", "a", false}, {"a", "a", "a", false}, {"", "", "", false}, {"a", "b", "", true},
	} {
		got, err := valueID(tc.id, tc.old)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("valueID(%q, %q) = %q, %v; want %q, error %v", tc.id, tc.old, got, err, tc.want, tc.err)
		}
	}
}

// TestSplitUTF16 cuts between code points, a surrogate pair whole.
func TestSplitUTF16(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want []string
	}{
		{"", 2, []string{""}},
		{"abcde", 2, []string{"ab", "cd", "e"}},
		{"a😀b", 2, []string{"a", "😀", "b"}},
		{"😀😀", 3, []string{"😀", "😀"}},
	} {
		if got := splitUTF16(tc.in, tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("splitUTF16(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestTextBlocks(t *testing.T) {
	tests := []struct {
		name, content string
		texts         []string
		chars, images int
		bad           bool
	}{
		{"text and image", `[{"type":"text","text":"ab\ncd"},{"type":"image","data":"x"}]`, []string{`ab\ncd`}, 5, 1, false},
		{"elements that are not objects", `["x",1,{"type":"text","text":"é"},null]`, []string{"é"}, 1, 0, false},
		{"a member named twice: the last counts", `[{"type":"image","type":"text","text":"a","text":"bc"}]`, []string{"bc"}, 2, 0, false},
		{"text not a string", `[{"type":"text","text":3}]`, nil, 0, 0, false},
		{"a lone surrogate escape", `[{"type":"text","text":"\ud800x"}]`, []string{`\ud800x`}, 2, 0, false},
		{"empty", `[]`, nil, 0, 0, false},
		{"not an array", `{"type":"text"}`, nil, 0, 0, true},
		{"more after the array", `[] []`, nil, 0, 0, true},
		{"broken", `[{"type":"text","text":"a"`, nil, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts, chars, images, err := textBlocks([]byte(tt.content))
			if (err != nil) != tt.bad {
				t.Fatalf("err = %v, want an error: %v", err, tt.bad)
			}
			if tt.bad {
				return
			}
			var got []string
			for _, b := range texts {
				got = append(got, string(b))
			}
			if !slices.Equal(got, tt.texts) || chars != tt.chars || images != tt.images {
				t.Errorf("textBlocks = %q, %d chars, %d images; want %q, %d, %d", got, chars, images, tt.texts, tt.chars, tt.images)
			}
		})
	}
}
