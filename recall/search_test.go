package recall_test

import (
	"context"
	"errors"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/recall"
)

// TestSearchTruncatedExactly checks that Report.Truncated says whether
// there were more hits than the bound, not whether the bound was reached.
func TestSearchTruncatedExactly(t *testing.T) {
	ctx := context.Background()
	tr, side := open(t, fixture)
	all, err := recall.Search(ctx, tr, side, "alpha", recall.GrepOptions{MaxHits: -1}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := all.Count
	if n < 2 || all.Truncated || len(all.Hits) != n {
		t.Fatalf("unbounded search: %d hits (%d kept), truncated %v; want at least 2, all kept", n, len(all.Hits), all.Truncated)
	}
	seen := 0
	r, err := recall.Search(ctx, tr, side, "alpha", recall.GrepOptions{MaxHits: n}, false, func(recall.Hit) { seen++ })
	if err != nil || r.Count != n || r.Truncated || seen != n || len(r.Hits) != 0 {
		t.Errorf("max %d of %d: count %d truncated %v seen %d kept %d, %v", n, n, r.Count, r.Truncated, seen, len(r.Hits), err)
	}
	r, err = recall.Search(ctx, tr, side, "alpha", recall.GrepOptions{MaxHits: n - 1}, true, nil)
	if err != nil || r.Count != n-1 || !r.Truncated || len(r.Hits) != n-1 {
		t.Errorf("max %d of %d: count %d truncated %v kept %d, %v", n-1, n, r.Count, r.Truncated, len(r.Hits), err)
	}
	if _, err := recall.Search(ctx, tr, side, "(", recall.GrepOptions{Regexp: true}, true, nil); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("bad regexp: err = %v, want ErrInvalid", err)
	}
}
