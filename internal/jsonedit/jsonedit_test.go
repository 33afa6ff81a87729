package jsonedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

const line = `{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"toolCall","id":"c1","name":"purge_control","arguments":{"action":"restore","entry":"x/~y"}}]},"a/b":1,"m~n":2}`

func TestFind(t *testing.T) {
	tests := []struct {
		name, raw, ptr, want string
		ok                   bool
	}{
		{"Root", line, "", line, true},
		{"TopMember", line, "/id", `"a1"`, true},
		{"Nested", line, "/message/role", `"assistant"`, true},
		{"ArrayElement", line, "/message/content/0", `{"type":"text","text":"hi"}`, true},
		{"DeepLeaf", line, "/message/content/1/arguments/entry", `"x/~y"`, true},
		{"EscapedSlash", line, "/a~1b", `1`, true},
		{"EscapedTilde", line, "/m~0n", `2`, true},
		{"MissingMember", line, "/nope", "", false},
		{"IndexPastEnd", line, "/message/content/2", "", false},
		{"LeadingZeroIndex", line, "/message/content/01", "", false},
		{"IndexIntoObject", line, "/message/0", "", false},
		{"MemberOfString", line, "/id/x", "", false},
		{"NoSlash", line, "id", "", false},
		{"BadEscape", line, "/a~2b", "", false},
		{"DuplicateLastWins", `{"a":1,"a":2}`, "/a", `2`, true},
		{"EscapedName", `{"\u0061":"v"}`, "/a", `"v"`, true},
		{"SpacesKept", `{ "a" : { "b" : [ 1 , 2 ] } }`, "/a/b/1", `2`, true},
		{"InvalidUTF8", "{\"a\":\"\xff\",\"b\":3}", "/b", `3`, true},
		{"LoneSurrogate", `{"a":"\ud800","b":true}`, "/a", `"\ud800"`, true},
		{"Malformed", `{"a":`, "/a", "", false},
		{"NotJSON", `hello`, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, e, ok := Find([]byte(tt.raw), tt.ptr)
			if ok != tt.ok {
				t.Fatalf("Find(%q) ok = %v, want %v", tt.ptr, ok, tt.ok)
			}
			if ok && tt.raw[s:e] != tt.want {
				t.Fatalf("Find(%q) = %q, want %q", tt.ptr, tt.raw[s:e], tt.want)
			}
		})
	}
}

func TestMember(t *testing.T) {
	tests := []struct {
		name, raw, obj, member, wantName, wantValue string
		ok                                          bool
	}{
		{"Top", line, "", "type", `"type"`, `"message"`, true},
		{"InBlock", line, "/message/content/1", "arguments", `"arguments"`, `{"action":"restore","entry":"x/~y"}`, true},
		{"NameWithSlash", line, "", "a/b", `"a/b"`, `1`, true},
		{"Absent", line, "", "zzz", "", "", false},
		{"NotAnObject", line, "/message/content", "0", "", "", false},
		{"Duplicate", `{"x":1, "x" :2}`, "", "x", `"x"`, `2`, true},
		{"EscapedName", `{"\u005frestored":"t"}`, "", "_restored", `"\u005frestored"`, `"t"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, vs, ve, ok := Member([]byte(tt.raw), tt.obj, tt.member)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if got := tt.raw[ns : ns+len(tt.wantName)]; got != tt.wantName {
				t.Errorf("name at %d = %q, want %q", ns, got, tt.wantName)
			}
			if got := tt.raw[vs:ve]; got != tt.wantValue {
				t.Errorf("value = %q, want %q", got, tt.wantValue)
			}
		})
	}
}

func TestObjectEnd(t *testing.T) {
	tests := []struct {
		name, raw, obj string
		brace          int
		empty, ok      bool
	}{
		{"Top", `{"a":1}`, "", 6, false, true},
		{"Empty", `{}`, "", 1, true, true},
		{"EmptyWithSpace", `{ }`, "", 2, true, true},
		{"Nested", `{"a":{"b":{}}}`, "/a/b", 11, true, true},
		{"TrailingCR", "{\"a\":1}\r", "", 6, false, true},
		{"Array", `{"a":[]}`, "/a", 0, false, false},
		{"Missing", `{"a":1}`, "/b", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, empty, ok := ObjectEnd([]byte(tt.raw), tt.obj)
			if ok != tt.ok || (ok && (b != tt.brace || empty != tt.empty)) {
				t.Fatalf("ObjectEnd = %d, %v, %v; want %d, %v, %v", b, empty, ok, tt.brace, tt.empty, tt.ok)
			}
		})
	}
}

func TestInsertAndRemove(t *testing.T) {
	tests := []struct {
		name, raw, obj, member, value, want string
	}{
		{"Top", `{"a":1}`, "", "_restored", `"2026-02-20T17:30:00.000Z"`, `{"a":1,"_restored":"2026-02-20T17:30:00.000Z"}`},
		{"EmptyObject", `{"o":{}}`, "/o", "x", `true`, `{"o":{"x":true}}`},
		{"EmptyWithSpace", `{"o":{ }}`, "/o", "x", `true`, `{"o":{ "x":true}}`},
		{"SpaceBeforeBrace", `{"a":1 }`, "", "x", `2`, `{"a":1 ,"x":2}`},
		{"Block", line, "/message/content/1", "_redacted", `true`, ""},
		{"CRLFLine", "{\"a\":1}\r", "", "x", `2`, "{\"a\":1,\"x\":2}\r"},
		{"NameNeedsEscape", `{"a":1}`, "", "q\"", `2`, `{"a":1,"q\"":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			sp, err := Insert(raw, tt.obj, tt.member, []byte(tt.value))
			if err != nil {
				t.Fatal(err)
			}
			got := Apply(raw, sp)
			if tt.want != "" && string(got) != tt.want {
				t.Fatalf("insert: %s, want %s", got, tt.want)
			}
			if !json.Valid(bytes.TrimSpace(got)) {
				t.Fatalf("insert gave invalid JSON: %s", got)
			}
			if _, vs, ve, ok := Member(got, tt.obj, tt.member); !ok || string(got[vs:ve]) != tt.value {
				t.Fatalf("inserted member not found in %s", got)
			}
			if _, err := Insert(got, tt.obj, tt.member, []byte(tt.value)); !errors.Is(err, ErrExists) {
				t.Fatalf("second insert: err = %v, want ErrExists", err)
			}
			rm, err := Remove(got, tt.obj, tt.member)
			if err != nil {
				t.Fatal(err)
			}
			if back := Apply(got, rm); !bytes.Equal(back, raw) {
				t.Fatalf("remove: %s, want %s", back, raw)
			}
		})
	}
}

func TestRemoveFirstMember(t *testing.T) {
	tests := []struct{ name, raw, member, want string }{
		{"FirstOfTwo", `{"x":1,"a":2}`, "x", `{"a":2}`},
		{"FirstWithSpaces", `{"x":1 , "a":2}`, "x", `{"a":2}`},
		{"Only", `{"x":1}`, "x", `{}`},
		{"Middle", `{"a":1,"x":2,"b":3}`, "x", `{"a":1,"b":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := Remove([]byte(tt.raw), "", tt.member)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(Apply([]byte(tt.raw), sp)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := Remove([]byte(`{"a":1}`), "", "x"); !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("remove absent: err = %v, want ErrNotFound", err)
	}
}

func TestSetAndReplace(t *testing.T) {
	tests := []struct{ name, raw, obj, member, value, want string }{
		{"ReplaceExisting", `{"_extractable":5,"a":1}`, "", "_extractable", `false`, `{"_extractable":false,"a":1}`},
		{"InsertAbsent", `{"a":1}`, "", "_extractable", `10`, `{"a":1,"_extractable":10}`},
		{"ReplaceKeepsSpacing", `{"a" : 1 }`, "", "a", `"x"`, `{"a" : "x" }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := Set([]byte(tt.raw), tt.obj, tt.member, []byte(tt.value))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(Apply([]byte(tt.raw), sp)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	raw := []byte(line)
	sp, err := Replace(raw, "/message/content/1/arguments", []byte(`{"redacted":"purge_control restore x"}`))
	if err != nil {
		t.Fatal(err)
	}
	got := Apply(raw, sp)
	if s, e, ok := Find(got, "/message/content/1/arguments/redacted"); !ok || string(got[s:e]) != `"purge_control restore x"` {
		t.Fatalf("replace: %s", got)
	}
	if _, err := Replace(raw, "/nope", nil); !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("replace missing: %v", err)
	}
	if _, err := Insert(raw, "/message/content", "x", []byte("1")); !errors.Is(err, ErrNoObject) {
		t.Fatalf("insert into array: %v", err)
	}
}

func TestDiff(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"Equal", "abc", "abc"},
		{"Middle", "abcdef", "abXYef"},
		{"Insert", "abc", "abXc"},
		{"Delete", "abXc", "abc"},
		{"Repeated", "aaaa", "aaa"},
		{"AllNew", "abc", "xyz"},
		{"FromEmpty", "", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := Diff([]byte(tt.old), []byte(tt.new))
			if got := string(Apply([]byte(tt.old), sp)); got != tt.new {
				t.Fatalf("Apply(Diff) = %q, want %q (splice %+v)", got, tt.new, sp)
			}
		})
	}
}

func TestSplitPointer(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"/", []string{""}, true},
		{"/a/b", []string{"a", "b"}, true},
		{"/a~1b/~0", []string{"a/b", "~"}, true},
		{"a", nil, false},
		{"/a~", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SplitPointer(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v", err)
			}
			if tt.ok && len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
			if tt.ok && tt.in != "" {
				j := ""
				for _, s := range got {
					j = Join(j, s)
				}
				if j != tt.in {
					t.Fatalf("Join = %q, want %q", j, tt.in)
				}
			}
		})
	}
}

// FuzzMembers checks the invariants of Member, Insert and Remove on
// arbitrary input: spans lie inside the input and hold one valid JSON
// value, inserting then removing a member gives back the exact bytes, and
// nothing panics.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		line,
		`{}`, `{ }`, `{"a":1 }`, `{"x":{"y":[1,{"z":{}}]}}`,
		"{\"a\":\"\xff\",\"b\":\"\\ud800\"}\r",
		`{"a":1,"a":{"b":2}}`, `{"a":`, `[1,2]`, `{"a":1}{"b":2}`,
	} {
		f.Add([]byte(s), "/a", "_restored")
	}
	f.Add([]byte(line), "/message/content/1", "_redacted")
	f.Fuzz(func(t *testing.T, raw []byte, obj, name string) {
		if ns, vs, ve, ok := Member(raw, obj, name); ok {
			if ns < 0 || ns >= vs || vs >= ve || ve > len(raw) || raw[ns] != '"' {
				t.Fatalf("bad member span %d %d %d in %q", ns, vs, ve, raw)
			}
			if s, e, ok := Find(raw[vs:ve], ""); !ok || s != 0 || e != ve-vs {
				t.Fatalf("member value %q is not one JSON value", raw[vs:ve])
			}
		}
		if s, e, ok := Find(raw, obj); ok && (s < 0 || e > len(raw) || s >= e) {
			t.Fatalf("bad span %d %d", s, e)
		}
		sp, err := Insert(raw, obj, name, []byte(`{"v":[1,"x"]}`))
		if err != nil {
			return
		}
		got := Apply(raw, sp)
		if _, vs, ve, ok := Member(got, obj, name); !ok || string(got[vs:ve]) != `{"v":[1,"x"]}` {
			t.Fatalf("inserted member %q not found at %q in %q", name, obj, got)
		}
		rm, err := Remove(got, obj, name)
		if err != nil {
			t.Fatalf("remove: %v", err)
		}
		if back := Apply(got, rm); !bytes.Equal(back, raw) {
			t.Fatalf("insert+remove: %q, want %q", back, raw)
		}
	})
}
