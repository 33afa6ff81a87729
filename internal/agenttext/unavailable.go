package agenttext

import "fmt"

// UnavailableRestore is the answer of purge_control restore when the side
// store holding the value key cannot be reached now (a remote store down,
// or answering server errors): the value cannot be read now, it is kept
// in the side store and nothing was changed, and the same restore may be
// tried again later. cause is the error's message.
func UnavailableRestore(key, cause string) string {
	return fmt.Sprintf("The stored value %s cannot be read now: the side store that holds it cannot be reached (%s). "+
		"The value is kept there and nothing was changed; try purge_control restore of %s again later.", key, cause, key)
}

// UnavailableContext is the answer of purge_control get_context when the
// side store cannot be reached now: the session's extracted values cannot
// be listed, they are kept there, and get_context may be tried again
// later. cause is the error's message.
func UnavailableContext(cause string) string {
	return fmt.Sprintf("The extracted values of this session cannot be listed now: the side store that holds them cannot be reached (%s). "+
		"They are kept there and nothing was changed; try purge_control get_context again later.", cause)
}
