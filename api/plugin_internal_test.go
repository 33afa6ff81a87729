package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPluginSourceBusy answers 503 at once when MaxSourceRequests
// requests are being stored.
func TestPluginSourceBusy(t *testing.T) {
	s := &server{sourceSlots: make(chan struct{}, MaxSourceRequests)}
	for range MaxSourceRequests {
		s.sourceSlots <- struct{}{}
	}
	r := httptest.NewRequest("POST", "/api/plugin/v1/source", strings.NewReader("{}"))
	_, err := s.pluginSource(r)
	var se statusError
	if !errors.As(err, &se) || statusOf(err) != http.StatusServiceUnavailable {
		t.Fatalf("pluginSource with no free slot: %v", err)
	}
}
