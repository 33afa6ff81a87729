package brainsurgeon_test

import (
	"slices"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func TestBranchPointsAndCompactions(t *testing.T) {
	entry := func(id, parent, typ string) bs.Node {
		return bs.Node{Kind: bs.KindEntry, ID: id, ParentID: parent, Type: typ}
	}
	for _, tt := range []struct {
		name        string
		nodes       []bs.Node
		branches    int
		compactions []int
	}{
		{name: "Empty"},
		{name: "Chain", nodes: []bs.Node{entry("a", "", "message"), entry("b", "a", "message"), entry("c", "b", "compaction")},
			compactions: []int{2}},
		{name: "TwoRoots", nodes: []bs.Node{entry("a", "", "message"), entry("b", "", "message")}, branches: 1},
		{name: "ForkAndBlank", nodes: []bs.Node{{Kind: bs.KindBlank}, entry("a", "", "message"), entry("b", "a", "compaction"),
			entry("c", "a", "message"), {Kind: bs.KindMalformed, Type: "compaction"}, entry("d", "c", "compaction")},
			branches: 1, compactions: []int{2, 5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := bs.BranchPoints(tt.nodes); got != tt.branches {
				t.Errorf("BranchPoints = %d, want %d", got, tt.branches)
			}
			if got := bs.Compactions(tt.nodes); !slices.Equal(got, tt.compactions) {
				t.Errorf("Compactions = %v, want %v", got, tt.compactions)
			}
		})
	}
}
