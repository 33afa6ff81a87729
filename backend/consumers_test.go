package backend_test

import (
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// The interfaces that policy packages declare for what they consume are
// implemented by the stores that backend.Open assembles. The policy
// packages find them by type assertion at run time; these lines make a
// change of a signature a compile error instead of a silently skipped
// feature.
var (
	_ retention.SideCollector = (*sidedir.Store)(nil)
	_ retention.GoneLister    = (*backend.Multi)(nil)
	_ retention.GoneLister    = (*session.Store)(nil)
	_ trash.Store             = (*backend.Multi)(nil)
	_ trash.Store             = (*session.Store)(nil)
	_ restore.EditChecker     = (*backend.Multi)(nil)
	_ restore.EditChecker     = (*sqlite.Store)(nil)
)
