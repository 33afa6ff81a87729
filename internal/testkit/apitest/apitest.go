// Package apitest is the request helper of the tests that drive the REST
// API on a test server from outside the api package.
package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Call does one request to srv and decodes a JSON answer into out (when
// not nil); the test fails unless the status is want. It returns the
// answer's body.
func Call(tb testing.TB, srv *httptest.Server, method, path, body string, want int, out any) []byte {
	tb.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode != want {
		tb.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return b
}
