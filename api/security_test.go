package api_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testtree"
)

// badSegments are path parameter values (as sent on the request line)
// that must be refused with 400 wherever they appear.
var badSegments = []struct{ name, seg string }{
	{"dotdot", ".."},
	{"dot", "."},
	{"encoded dotdot", "%2e%2e"},
	{"encoded DOTDOT", "%2E%2E"},
	{"half encoded dotdot", ".%2e"},
	{"encoded dot", "%2e"},
	{"encoded absolute path", "%2Fetc%2Fpasswd"},
	{"encoded traversal", "..%2F..%2Fetc"},
	{"backslash", "a%5Cb"},
	{"backslash traversal", "..%5C..%5Cetc"},
	{"NUL", "%00"},
	{"NUL inside", "a%00b"},
	{"division slash U+2215", "a%E2%88%95b"},
	{"fullwidth solidus U+FF0F", "a%EF%BC%8Fb"},
	{"fraction slash U+2044", "a%E2%81%84b"},
	{"big solidus U+29F8", "a%E2%A7%B8b"},
	{"fullwidth reverse solidus U+FF3C", "a%EF%BC%BCb"},
	{"division slash unescaped", "a\u2215b"},
	{"dotdot division slash", "..%E2%88%95..%E2%88%95etc"},
	{"hidden name", ".ssh"},
	{"empty", ""},
	{"too long", strings.Repeat("a", 129)},
	{"space", "a%20b"},
	{"newline", "a%0Ab"},
}

// routeTarget fills a route pattern's wildcards with valid values, the
// one named bad with seg.
func routeTarget(pattern, bad, seg string, valid map[string]string) (method, target string) {
	method, path, _ := strings.Cut(pattern, " ")
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") {
			name := strings.Trim(p, "{}")
			if name == bad {
				parts[i] = seg
			} else {
				parts[i] = valid[name]
			}
		}
	}
	return method, strings.Join(parts, "/")
}

func wildcards(pattern string) []string {
	var out []string
	for _, p := range strings.Split(pattern, "/") {
		if strings.HasPrefix(p, "{") {
			out = append(out, strings.Trim(p, "{}"))
		}
	}
	return out
}

var userName = map[string]string{"agent": "agent", "id": "session_id", "entryId": "entry_id", "name": "name"}

// TestPathParametersEveryRoute sends every bad segment in every path
// parameter of every route and wants a 400 naming the parameter, with
// nothing read or written outside (or inside) the agents dir.
func TestPathParametersEveryRoute(t *testing.T) {
	f := newFixture(t, false)
	secret := filepath.Join(f.root, "secret.txt")
	if err := os.WriteFile(secret, []byte("do not touch"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newDaemon(t, f.set) // writes its config before the snapshot
	before := testtree.Snapshot(t, f.root)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: d, Trash: newTrash(f)})
	valid := map[string]string{"agent": "alpha", "id": f.synthIDs[0], "entryId": "e1", "name": "prune"}
	routes := 0
	for _, pattern := range api.Routes() {
		names := wildcards(pattern)
		if len(names) == 0 {
			continue
		}
		routes++
		for _, name := range names {
			for _, bad := range badSegments {
				method, target := routeTarget(pattern, name, bad.seg, valid)
				t.Run(pattern+"/"+name+"/"+bad.name, func(t *testing.T) {
					code, body := rawRequest(t, srv, method, target)
					if code != http.StatusBadRequest {
						t.Fatalf("%s %s: %d %s, want 400", method, target, code, body)
					}
					if !strings.Contains(body, `"error"`) || !strings.Contains(body, "invalid "+userName[name]) {
						t.Errorf("%s %s: %s, want an error naming %s", method, target, body, userName[name])
					}
				})
			}
		}
	}
	if routes < 11 {
		t.Errorf("only %d routes with parameters tested", routes)
	}
	// A segment the HTTP server itself cannot decode is refused before
	// routing.
	if code, body := rawRequest(t, srv, "GET", "/api/sessions/alpha/a%zzb"); code != 400 {
		t.Errorf("bad escape: %d %s", code, body)
	}
	// The agent filter of the list is checked too.
	for _, q := range []string{"..", "%2Fetc", "a%00", "a%E2%88%95b"} {
		if code, body := rawRequest(t, srv, "GET", "/api/sessions?agent="+q); code != 400 || !strings.Contains(body, "agent") {
			t.Errorf("?agent=%s: %d %s", q, code, body)
		}
	}
	testtree.Unchanged(t, f.root, before) // the requests changed nothing
}

func TestAuth(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Trash: newTrash(f), APIKeys: []string{"key-one", "key-two"}})
	valid := map[string]string{"agent": "alpha", "id": f.synthIDs[0], "entryId": "e1", "name": "prune"}
	public := map[string]bool{"GET /api/health": true, "GET /api/auth-info": true, "GET /auth-info": true,
		"GET /api/config": true, "GET /api/config/env": true}
	for _, pattern := range api.Routes() {
		method, target := routeTarget(pattern, "", "", valid)
		code, body := rawRequest(t, srv, method, target)
		if public[pattern] {
			if code != 200 {
				t.Errorf("public %s: %d %s", pattern, code, body)
			}
			continue
		}
		if code != http.StatusUnauthorized || !strings.Contains(body, "X-API-Key") {
			t.Errorf("%s without a key: %d %.200s, want 401", pattern, code, body)
		}
		for _, k := range []string{"wrong", "key-on", "KEY-ONE", "key-onekey-two"} {
			if code, body := rawRequest(t, srv, method, target, "X-API-Key", k); code != http.StatusForbidden {
				t.Errorf("%s with key %q: %d %.200s, want 403", pattern, k, code, body)
			}
		}
	}
	c := &client{tb: t, srv: srv}
	var ai map[string]any
	c.json("GET", "/api/auth-info", "", 200, &ai)
	if ai["auth_required"] != true {
		t.Errorf("auth-info: %v", ai)
	}
	c.json("POST", "/api/config", `{"keep_recent":4}`, 401, nil)
	c.key = "key-two"
	c.json("POST", "/api/config", `{"keep_recent":4}`, 200, nil)
	c.json("GET", "/api/sessions", "", 200, nil)
	c.key = "key-one"
	c.json("GET", "/api/agents", "", 200, nil)
}

func TestReadOnly(t *testing.T) {
	f := newFixture(t, false)
	d := newDaemon(t, f.set) // writes its config before the snapshot
	before := testtree.Snapshot(t, f.root)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: d, Trash: newTrash(f), ReadOnly: true})
	c := &client{tb: t, srv: srv}
	e := firstExtracted(t, c, "alpha", f.synthIDs[0])
	valid := map[string]string{"agent": "alpha", "id": f.synthIDs[0], "entryId": e.ID, "name": "prune"}
	writes := 0
	for _, pattern := range api.Routes() {
		method, target := routeTarget(pattern, "", "", valid)
		if method == "GET" || pattern == "POST /api/plugin/v1/tool" || pattern == "POST /api/plugin/v1/assemble" || pattern == "POST /api/plugin/v1/compact" ||
			pattern == "POST /api/plugin/v1/compaction" {
			continue // the plugin's tool and engine routes, and the host's compaction (which writes nothing), answer in read-only mode
		}
		writes++
		body := `{"_extractable":false,"value":false}`
		if strings.Contains(target, "/config") {
			body = `{"enabled":false}`
		} else if !strings.Contains(target, "/meta") && !strings.Contains(target, "/extractable") {
			body = ""
		}
		code, b, _ := c.do(method, target, body)
		if code != http.StatusForbidden || !strings.Contains(string(b), "read-only") {
			t.Errorf("%s in read-only mode: %d %s, want 403", pattern, code, b)
		}
	}
	if writes < 11 {
		t.Errorf("only %d write routes", writes)
	}
	// Reads still work.
	c.json("GET", "/api/sessions", "", 200, nil)
	c.json("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"/entries/"+e.ID+"/extracted?preview=200", "", 200, nil)
	var ai map[string]any
	c.json("GET", "/api/auth-info", "", 200, &ai)
	if ai["read_only"] != true {
		t.Errorf("auth-info: %v", ai)
	}
	testtree.Unchanged(t, f.root, before) // the read-only server changed nothing
}

func TestCORS(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, CORSOrigins: []string{"http://localhost:3000"}, APIKeys: []string{"k"}})
	c := &client{tb: t, srv: srv, key: "k"}
	for _, tc := range []struct {
		origin string
		want   string
	}{
		{"http://localhost:3000", "http://localhost:3000"},
		{"http://evil.example", ""},
		{"http://localhost:3000.evil.example", ""},
		{"null", ""},
	} {
		_, _, h := c.do("GET", "/api/sessions", "", "Origin", tc.origin)
		if got := h.Get("Access-Control-Allow-Origin"); got != tc.want {
			t.Errorf("GET from %s: Access-Control-Allow-Origin %q, want %q", tc.origin, got, tc.want)
		}
		// Preflight: no key needed, headers only for a listed origin.
		code, _, h := (&client{tb: t, srv: srv}).do("OPTIONS", "/api/config", "", "Origin", tc.origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-api-key")
		got := h.Get("Access-Control-Allow-Origin")
		if tc.want != "" && (code != http.StatusNoContent || got != tc.want || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "X-API-Key")) {
			t.Errorf("preflight from %s: %d, allow-origin %q", tc.origin, code, got)
		}
		if tc.want == "" && (code != http.StatusForbidden || got != "") {
			t.Errorf("preflight from %s: %d, allow-origin %q, want 403 and none", tc.origin, code, got)
		}
	}
	_, _, h := c.do("GET", "/api/sessions", "")
	if h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS header without an Origin")
	}
}

func TestBodyCap(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), MaxBodyBytes: 1024})
	c := &client{tb: t, srv: srv}
	big := `{"keep_recent":3,"x":"` + strings.Repeat("a", 4096) + `"}`
	code, b, _ := c.do("POST", "/api/config", big)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "1024") {
		t.Errorf("big config body: %d %s", code, b)
	}
	// Without a Content-Length (chunked), the cap applies while reading.
	for _, path := range []string{"/api/config", "/api/sessions/alpha/" + f.synthIDs[0] + "/entries/e1/restore"} {
		pr, pw := io.Pipe()
		go func() { _, _ = io.WriteString(pw, big); pw.Close() }()
		req, _ := http.NewRequest("POST", srv.URL+path, pr)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked big body to %s: %d %s", path, resp.StatusCode, b)
		}
	}
	c.json("POST", "/api/config", `{"keep_recent":4}`, 200, nil)
}

func TestNewChecksOptions(t *testing.T) {
	f := newFixture(t, false)
	for _, tc := range []struct {
		name string
		opts api.Options
		want string
	}{
		{"NoSet", api.Options{},
			"api: Options.Installation must hold an opened installation's Store and Side store, and Options.Backend its Backend (backend.Open's Set has them): invalid input"},
		{"EmptyKey", api.Options{Installation: f.set.Installation, Backend: f.set, APIKeys: []string{"k", " "}},
			"api: API key 2 is empty (expected a non-empty key; give no keys for open access): invalid input"},
		{"BadOrigin", api.Options{Installation: f.set.Installation, Backend: f.set, CORSOrigins: []string{"localhost:3000/x"}},
			`api: CORS origin "localhost:3000/x": expected scheme://host[:port], such as http://localhost:3000: invalid input`},
		{"OriginWithPath", api.Options{Installation: f.set.Installation, Backend: f.set, CORSOrigins: []string{"http://a.example/app"}},
			`api: CORS origin "http://a.example/app": expected scheme://host[:port], such as http://localhost:3000: invalid input`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := api.New(tc.opts)
			if !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("api.New: got handler %v, error %v; want an error wrapping ErrInvalid", h, err)
			}
			if err.Error() != tc.want {
				t.Errorf("api.New error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}
