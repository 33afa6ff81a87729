//go:build !linux

package extract

// syncFiles makes files durable with an fsync of each (there is no syncfs
// outside Linux).
func syncFiles(_ string, files []string) error { return syncEach(files) }
