//go:build !linux

package openclaw

import "syscall"

// groupAttr starts a process in its own process group.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
