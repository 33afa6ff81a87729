package recall_test

import (
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/recalltest"
)

// fixture, secret and open are recalltest's Fixture, Secret and Open.
var fixture = recalltest.Fixture

const secret = recalltest.Secret

func open(tb testing.TB, lines []string) (bs.Transcript, bs.SideStore) {
	return recalltest.Open(tb, lines)
}
