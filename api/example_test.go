package api_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
)

// ExampleNew mounts the API in another program's mux, with an API key
// and read-only mode. A program that runs the daemon passes it too
// (Options.Daemon: its config service, jobs, Restorer, engine and trash).
func ExampleNew() {
	root, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(root)
	agents := filepath.Join(root, "agents")
	_ = os.MkdirAll(filepath.Join(agents, "main", "sessions"), 0o700)

	set, err := backend.Open(context.Background(), agents, backend.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := api.New(api.Options{Installation: set.Installation, Backend: set, APIKeys: []string{"secret"}, ReadOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", h)
	fmt.Println(len(api.Routes()) > 20)
	// Output: true
}
