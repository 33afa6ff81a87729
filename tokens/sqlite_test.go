package tokens_test

import (
	"context"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// TestLearnSQLite learns every session of a corpus SQLite store (a copy)
// through the root interfaces: the model works on both backends. The
// store's provider records zero usage on every turn, so the estimate is
// the base count, said so, with no overhead.
func TestLearnSQLite(t *testing.T) {
	ctx := context.Background()
	st := sqlite.NewStore(testcorpus.CopyStore(t), sqlite.Options{})
	refs, _, err := st.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) == 0 {
		t.Fatal("the corpus SQLite store lists no session")
	}
	for _, ref := range refs {
		tr, err := st.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := tokens.Learn(ctx, tr, tokens.CharsPer4{})
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		cur := m.Current()
		if cur.Tokens <= 0 || cur.Method != "chars/4 (no recorded usage)" || cur.Overhead != 0 || cur.History != cur.Tokens {
			t.Errorf("%s: Current() = %+v, want the chars/4 count of the history", ref, cur)
		}
	}
}
