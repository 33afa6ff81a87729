module github.com/brainsurgeon/brainsurgeon

go 1.26.0

require (
	github.com/adhocore/gronx v1.20.4
	github.com/go-json-experiment/json v0.0.0-20260820222146-c27c302e5fc3
	github.com/gofrs/flock v0.13.1
	github.com/klauspost/compress v1.20.3
	golang.org/x/sys v0.47.0
	pgregory.net/rapid v1.3.0
)
