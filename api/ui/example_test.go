package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/backend"
)

// ExampleHandler serves the web UI beside the REST API: the API answers
// /api/, the UI every other path.
func ExampleHandler() {
	root, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(root)
	agents := filepath.Join(root, "agents")
	_ = os.MkdirAll(filepath.Join(agents, "main", "sessions"), 0o700)

	set, err := backend.Open(context.Background(), agents, backend.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := api.New(api.Options{Installation: set.Installation, Backend: set, UI: ui.Handler(), AutoRefreshMS: 5000})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, path := range []string{"/", "/app.js", "/api/config/env"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Output:
	// / 200 text/html; charset=utf-8
	// /app.js 200 text/javascript; charset=utf-8
	// /api/config/env 200 application/json; charset=utf-8
}
