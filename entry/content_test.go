package entry

import "testing"

func TestContentMember(t *testing.T) {
	for _, tt := range []struct {
		name, pointer, prefix, member string
		whole, ok                     bool
	}{
		{"plain string content", "/message/content", "/message/content", "", true, true},
		{"block member", "/message/content/2/text", "/message/content", "text", false, true},
		{"nested member", "/message/content/0/arguments/path", "/message/content", "arguments/path", false, true},
		{"element of the array", "/content/3", "/content", "", false, true},
		{"other member", "/message/role", "/message/content", "", false, false},
		{"longer name", "/contentType", "/content", "", false, false},
		{"custom_message content", "/content/0/text", "/content", "text", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			member, whole, ok := ContentMember(tt.pointer, tt.prefix)
			if member != tt.member || whole != tt.whole || ok != tt.ok {
				t.Errorf("ContentMember(%q, %q) = %q, %v, %v; want %q, %v, %v", tt.pointer, tt.prefix, member, whole, ok, tt.member, tt.whole, tt.ok)
			}
		})
	}
}
