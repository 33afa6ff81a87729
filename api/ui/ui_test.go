package ui_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api/ui"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(ui.Handler())
	t.Cleanup(srv.Close)
	tests := []struct {
		name, method, path string
		status             int
		contentType        string
		body               string
	}{
		{"Index", "GET", "/", 200, "text/html", `<script type="module" src="app.js">`},
		{"Script", "GET", "/app.js", 200, "javascript", "boot()"},
		{"Style", "GET", "/style.css", 200, "text/css", ":root"},
		{"Icon", "GET", "/icon.svg", 200, "image/svg+xml", "<svg"},
		{"Head", "HEAD", "/", 200, "text/html", ""},
		{"Unknown", "GET", "/nope.js", 404, "", ""},
		{"DirectoryListing", "GET", "/static/", 404, "", ""},
		{"Post", "POST", "/", 405, "", ""},
		{"Delete", "DELETE", "/app.js", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d (%s)", tt.method, tt.path, resp.StatusCode, tt.status, b)
			}
			if got := resp.Header.Get("Content-Security-Policy"); got != ui.ContentSecurityPolicy {
				t.Errorf("Content-Security-Policy = %q", got)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			if tt.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow = %q", resp.Header.Get("Allow"))
			}
			if tt.contentType != "" && !strings.Contains(resp.Header.Get("Content-Type"), tt.contentType) {
				t.Errorf("Content-Type = %q, want %q", resp.Header.Get("Content-Type"), tt.contentType)
			}
			if !strings.Contains(string(b), tt.body) {
				t.Errorf("body does not contain %q", tt.body)
			}
		})
	}
}

// TestNoHTMLFromData checks the UI's sources for what would parse data as
// HTML or code, or load anything from elsewhere: every text is rendered
// with text nodes, and the machine running the UI may have no internet.
func TestNoHTMLFromData(t *testing.T) {
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setHTMLUnsafe|parseFromString|createContextualFragment`)
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?(https?:)?//|import\s*\(?\s*["'](https?:)?//`)
	importRe := regexp.MustCompile(`(?m)^import .* from '([^']+)';`)
	files := ui.FS()
	var n int
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := fs.ReadFile(files, path)
		if err != nil {
			return err
		}
		src := string(b)
		if strings.HasSuffix(path, ".js") {
			if m := forbidden.FindString(src); m != "" {
				t.Errorf("%s uses %s: render data with text nodes (dom.js h) instead", path, m)
			}
			for _, m := range importRe.FindAllStringSubmatch(src, -1) {
				name := strings.TrimPrefix(m[1], "./")
				if !strings.HasPrefix(m[1], "./") {
					t.Errorf("%s imports %q: only the UI's own modules (./name.js)", path, m[1])
				} else if _, err := fs.Stat(files, name); err != nil {
					t.Errorf("%s imports %q, which is not embedded", path, m[1])
				}
			}
		}
		if m := external.FindString(src); m != "" {
			t.Errorf("%s refers to another host (%q): everything must be embedded", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("only %d files embedded", n)
	}
}
