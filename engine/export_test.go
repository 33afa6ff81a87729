package engine

import (
	"context"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// MessagesOf runs messages with no request on the session's saved state,
// for the tests: each message's Index and Tokens, and the entries
// collapsed.
func (e *Engine) MessagesOf(ctx context.Context, tr bs.Transcript, ref bs.SessionRef) (index, tokens []int, collapsed []string, err error) {
	st, err := e.loadState(ref)
	if err != nil {
		return nil, nil, nil, err
	}
	msgs, err := e.messages(ctx, tr, nil, st)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, m := range msgs {
		index, tokens = append(index, m.Index), append(tokens, m.Tokens)
	}
	for id := range st.Collapsed {
		collapsed = append(collapsed, id)
	}
	return index, tokens, collapsed, nil
}
