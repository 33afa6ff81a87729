package trash

// SetFailpoint makes the next deletions call f after each step.
func SetFailpoint(f func(step string) error) { failpoint = f }

// ErrCrash stops a deletion where it is, as a killed process would.
var ErrCrash = errCrash
