package engine

import "testing"

// TestCacheLRU: past maxCaches sessions the least recently used caches are
// dropped, never the caller's, nor one whose session is in a call.
func TestCacheLRU(t *testing.T) {
	caches.mu.Lock()
	saved := caches.held
	caches.held = map[*sessionState]int{}
	caches.mu.Unlock()
	defer func() {
		caches.mu.Lock()
		caches.held = saved
		caches.mu.Unlock()
	}()
	var all []*sessionState
	busy := &sessionState{vc: &viewCache{sm: make([]stored, 1)}}
	busy.mu.Lock()
	touchCache(busy) // the oldest, but in a call
	for range maxCaches + 8 {
		ss := &sessionState{vc: &viewCache{sm: make([]stored, 1)}}
		ss.mu.Lock()
		touchCache(ss)
		ss.mu.Unlock()
		all = append(all, ss)
	}
	if busy.vc == nil {
		t.Fatal("the cache of a session in a call was dropped")
	}
	busy.mu.Unlock()
	held := 0
	for i, ss := range all {
		if ss.vc != nil {
			held++
		} else if i >= len(all)-maxCaches+1 {
			t.Fatalf("cache %d of %d dropped; want the oldest dropped first", i, len(all))
		}
	}
	if held+1 > maxCaches {
		t.Fatalf("%d caches held, want at most %d", held+1, maxCaches)
	}
	// A cache too large for the bound on messages drops the others.
	defer func(n int) { maxCachedMessages = n }(maxCachedMessages)
	maxCachedMessages = 100
	big := &sessionState{vc: &viewCache{sm: make([]stored, maxCachedMessages)}}
	big.mu.Lock()
	touchCache(big)
	big.mu.Unlock()
	for i, ss := range all {
		if ss.vc != nil {
			t.Fatalf("cache %d kept beside one of %d messages", i, maxCachedMessages)
		}
	}
	if big.vc == nil {
		t.Fatal("the caller's cache was dropped")
	}
}
