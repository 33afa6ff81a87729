package extract

import (
	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// FromConfig returns the Policy of a runtime config.
func FromConfig(c config.Config) Policy {
	p := Policy{
		Enabled:          c.Enabled,
		KeepRecent:       c.KeepRecent,
		MinValueLength:   c.MinValueLength,
		AgeThreshold:     c.AgeThreshold(),
		KeepAfterRestore: c.KeepAfterRestore(),
		PreviewChars:     c.PreviewChars,
		MinSavingTokens:  c.MinSavingTokens,
	}
	for _, t := range c.TriggerTypes {
		p.Triggers = append(p.Triggers, bs.TriggerType(t))
	}
	// A reused value keeps at least three quarters of the retention
	// period; an unreadable retention reuses nothing.
	if r, err := c.RetentionDuration(); err == nil {
		p.ReuseStoredWithin = r / 4
	}
	return p
}
