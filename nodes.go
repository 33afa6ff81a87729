package brainsurgeon

// BranchPoints returns the number of entries of a transcript's nodes (or
// roots, counted as one "root" parent) that have more than one child.
func BranchPoints(nodes []Node) int {
	kids := make(map[string]int)
	for i := range nodes {
		n := &nodes[i]
		if n.Kind != KindEntry {
			continue
		}
		p := n.ParentID
		if p == "" {
			p = "\x00root"
		}
		kids[p]++
	}
	c := 0
	for _, k := range kids {
		if k > 1 {
			c++
		}
	}
	return c
}

// Compactions returns the indexes into nodes of every compaction entry in
// order. The slice is new; nil when there is none.
func Compactions(nodes []Node) []int {
	var out []int
	for i := range nodes {
		if nodes[i].Kind == KindEntry && nodes[i].Type == "compaction" {
			out = append(out, i)
		}
	}
	return out
}
