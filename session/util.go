package session

import (
	"bytes"
	"os"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

func bytesContains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }

// fingerprintFile returns the version of an open file.
func fingerprintFile(f *os.File) (bs.Version, error) { return hostfile.FingerprintFile(f) }
