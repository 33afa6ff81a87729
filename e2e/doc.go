// Package e2e holds BrainSurgeon's end-to-end tests against real OpenClaw hosts (a gateway on loopback with a mock
// model; see internal/testkit/openclaw) and the real pi coding agent (its CLI in print mode, pointed at the same
// mock model). They are behind the build tag e2e and need `bash .ci/install-openclaw.sh` and, for pi,
// `bash .ci/install-oracle.sh`:
//
//	go test -count=1 -tags e2e ./e2e/...
package e2e
