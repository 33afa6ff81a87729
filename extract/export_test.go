package extract

// SetHoldBack sets how many bytes of side records a pass holds back until
// the keep window is known, and returns the previous value.
func SetHoldBack(n int64) int64 {
	old := holdBack
	holdBack = n
	return old
}

// SetBatchTarget sets the size of the batches of side records a pass puts
// at once, and returns the previous value.
func SetBatchTarget(n int64) int64 {
	old := batchTarget
	batchTarget = n
	return old
}
