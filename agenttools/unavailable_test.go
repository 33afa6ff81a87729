package agenttools_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
)

// TestUnavailableError words an error wrapping ErrUnavailable for the
// agent (the value cannot be read now, the cause, kept, try again later)
// and leaves every other error as it is. The plugin's path through Call
// is held by the API's TestSideStoreUnavailable.
func TestUnavailableError(t *testing.T) {
	down := fmt.Errorf("side store: get main/s r1: dial tcp 127.0.0.1:9000: connect: connection refused: %w", bs.ErrUnavailable)
	other := fmt.Errorf("entry r1: nothing to restore: %w", bs.ErrNotFound)
	for _, tt := range []struct {
		name, key string
		err       error
		want      []string // nil: err as it is
	}{
		{"restore", "r1", down, []string{"The stored value r1 cannot be read now", "cannot be reached (" + down.Error() + ")", "kept there", "purge_control restore of r1 again later"}},
		{"source key", "tc-call_1", fmt.Errorf("store: %w", down), []string{"The stored value tc-call_1 cannot be read now", "connection refused", "again later"}},
		{"get_context", "", down, []string{"extracted values of this session cannot be listed now", "connection refused", "kept there", "get_context again later"}},
		{"not found stays", "r1", other, nil},
		{"nil stays", "r1", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := agenttools.UnavailableError(tt.err, tt.key)
			if tt.want == nil {
				if got != tt.err {
					t.Fatalf("got %v, want the error as it is (%v)", got, tt.err)
				}
				return
			}
			if !errors.Is(got, bs.ErrUnavailable) || errors.Is(got, bs.ErrNotFound) {
				t.Fatalf("%v: want an error wrapping ErrUnavailable only", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("%q lacks %q", got.Error(), w)
				}
			}
		})
	}
}
