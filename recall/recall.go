// Package recall finds what compaction and extraction moved out of a
// session's context. Nothing is really gone: the host keeps compacted-away
// entries in the transcript, before the latest compaction's first kept
// entry or off the active path, and the side store keeps the values that
// extraction replaced by placeholders.
//
//   - [Grep] searches every line of a transcript and every extracted value,
//     streaming, with bounded output; each hit says where it was found.
//   - [Describe] shows one entry, or one compaction summary with the span of
//     entries it stands for.
//   - [Expand] returns the original raw entries a compaction summary stands
//     for, or, for a condensed summary, the summaries it covers, so a caller
//     drills down level by level.
//
// The package reaches transcripts and side values only through the root
// interfaces (brainsurgeon.Transcript, brainsurgeon.SideStore). It never
// writes.
package recall

import (
	"fmt"
	"sort"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Where tells where a line or value was found, as seen from the context the
// host builds.
type Where string

// The places a hit can come from.
const (
	// Active is an entry on the active path that the host still loads
	// (from the latest compaction's first kept entry on, the compaction
	// itself included), or the session header.
	Active Where = "active"
	// Compacted is an entry on the active path before the latest
	// compaction's first kept entry: the host replaced it by the summary.
	Compacted Where = "compacted"
	// OffPath is a line that is not on the active path (an abandoned
	// branch, a side append, a malformed line).
	OffPath Where = "off_path"
	// Extracted is a value held in the side store, moved out of its entry
	// and replaced by a placeholder.
	Extracted Where = "extracted"
)

// places tells, for every node of a transcript, whether it is active,
// compacted or off the path, and the position of each active-path node.
type places struct {
	where []Where
	pos   map[int]int // node index → position on the active path
	path  []int
}

// locate classifies the nodes of tr.
func locate(tr bs.Transcript) *places {
	nodes := tr.Nodes()
	p := &places{where: make([]Where, len(nodes)), pos: make(map[int]int, len(tr.ActivePath())), path: tr.ActivePath()}
	for i := range nodes {
		p.where[i] = OffPath
		if nodes[i].Kind == bs.KindHeader {
			p.where[i] = Active
		}
	}
	boundary := 0 // path positions before it are compacted
	c := tr.Context()
	for k, i := range p.path {
		p.pos[i] = k
	}
	if c.Compaction >= 0 {
		if c.FirstKept >= 0 {
			boundary = p.pos[c.FirstKept]
		} else {
			boundary = p.pos[c.Compaction]
		}
	}
	for k, i := range p.path {
		if k < boundary {
			p.where[i] = Compacted
		} else {
			p.where[i] = Active
		}
	}
	return p
}

// NearbyIDs returns up to n entry ids of tr a caller may have meant by an
// id that tr does not hold: first those sharing the longest prefix with id
// (a typo or a shortened id), then the newest entries of the active path
// (the ones a branch point is usually chosen from). The result is new on
// every call.
func NearbyIDs(tr bs.Transcript, id string, n int) []string {
	if n <= 0 {
		return nil
	}
	nodes := tr.Nodes()
	type cand struct {
		id     string
		common int
		line   int
	}
	var cands []cand
	seen := map[string]bool{}
	for i := range nodes {
		nd := &nodes[i]
		if nd.Kind != bs.KindEntry || nd.ID == "" || seen[nd.ID] {
			continue
		}
		seen[nd.ID] = true
		k := 0
		for k < len(id) && k < len(nd.ID) && id[k] == nd.ID[k] {
			k++
		}
		if k > 0 {
			cands = append(cands, cand{nd.ID, k, nd.Line})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].common > cands[b].common })
	var out []string
	have := map[string]bool{}
	for _, c := range cands {
		if len(out) >= (n+1)/2 {
			break
		}
		out = append(out, c.id)
		have[c.id] = true
	}
	path := tr.ActivePath()
	for k := len(path) - 1; k >= 0 && len(out) < n; k-- {
		nd := &nodes[path[k]]
		if nd.ID != "" && !have[nd.ID] {
			out = append(out, nd.ID)
			have[nd.ID] = true
		}
	}
	return out
}

// NotFound returns the error for an entry id that tr does not hold: it
// wraps brainsurgeon.ErrNotFound and lists nearby ids (see NearbyIDs).
func NotFound(tr bs.Transcript, what, id string) error {
	near := NearbyIDs(tr, id, 8)
	if len(near) == 0 {
		return fmt.Errorf("%s %q: no entry of session %s has that id, and the session has no entry ids: %w", what, id, tr.Ref(), bs.ErrNotFound)
	}
	return fmt.Errorf("%s %q: no entry of session %s has that id (expected an entry id; nearby ids: %s): %w",
		what, id, tr.Ref(), strings.Join(near, ", "), bs.ErrNotFound)
}

// Chain returns the node indexes (into tr.Nodes) from the root to node i
// along parentId links: the path the host would load with i as its leaf.
// For a v1 transcript, which has no links, it is every entry up to i. The
// slice is new on every call.
func Chain(tr bs.Transcript, i int) []int {
	nodes := tr.Nodes()
	if tr.Header().Version < 2 {
		var out []int
		for j := 0; j <= i; j++ {
			if nodes[j].Kind == bs.KindEntry {
				out = append(out, j)
			}
		}
		return out
	}
	var out []int
	seen := map[int]bool{}
	for j := i; j >= 0 && !seen[j]; {
		seen[j] = true
		out = append(out, j)
		p := nodes[j].ParentID
		if p == "" {
			break
		}
		n, ok := tr.Node(p)
		if !ok {
			break
		}
		j = n.Line - 1
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}
