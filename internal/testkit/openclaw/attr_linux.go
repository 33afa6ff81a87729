package openclaw

import "syscall"

// groupAttr starts a process in its own process group, killed when this
// process dies.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
