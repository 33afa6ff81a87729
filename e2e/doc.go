// Package e2e holds BrainSurgeon's end-to-end tests against real OpenClaw hosts (a gateway on loopback with a mock
// model; see internal/testkit/openclaw). They are behind the build tag e2e and need `bash .ci/install-openclaw.sh`:
//
//	go test -count=1 -tags e2e ./e2e/...
package e2e
