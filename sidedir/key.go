package sidedir

// plain reports whether s is printable ASCII without a quote or a
// backslash: JSON writes it as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
