// Package hostfile writes transcript files that a live host (OpenClaw, pi)
// may be using at the same time.
//
// It implements the host-safety write protocol (docs/ARCHITECTURE.md, "Host
// safety"):
//
//   - Every write first takes an exclusive flock(2) on the per-directory
//     file [DirLockName] (".brainsurgeon.flock" in the transcript's
//     directory), through github.com/gofrs/flock. It keeps BrainSurgeon
//     processes (and goroutines) from racing each other. The host never
//     looks at it: the name is a dot file that does not match "*.jsonl*",
//     so OpenClaw's session and sidecar scanners ignore it. The file is
//     created on first use and never removed.
//   - Then the host-compatible lock "<realpath(dir)>/<base>.lock" is taken
//     with an exclusive create, holding OpenClaw's payload
//     {"pid": N, "createdAt": ISO} pretty-printed with a two-space indent.
//     Stale locks are judged by OpenClaw's rules and taken over ([Acquire]).
//     The lock is held for milliseconds: only around the write itself.
//   - Under both locks [Rewrite] checks that the file is still the
//     [brainsurgeon.Version] that was read, writes a temp file in the same
//     directory, fsyncs it, renames it over the transcript and fsyncs the
//     directory. Bytes that an appender ignoring the lock adds to the old
//     file while this happens are carried over to the new one.
//   - [Append] adds lines with O_APPEND under the same locks.
//
// Temp files are named ".<base>.bs-tmp-<pid>-<random>" (and
// ".<base>.lock.bs-tmp-<pid>-<random>" for a lock payload being prepared):
// dot-prefixed so no host scanner takes one for a session. [CleanTemps] removes those left by
// crashed writers.
//
// The package never prints, exits or panics; it logs through
// [brainsurgeon.Logger] and returns wrapped errors.
package hostfile
