package api

import "net/http"

// ContextEngine is the engine interface the API uses, for the tests'
// fakes.
type ContextEngine = contextEngine

// NewWithEngine is New with e as the server's engine.
func NewWithEngine(opts Options, e ContextEngine) (http.Handler, error) {
	h, err := New(opts)
	if err != nil {
		return nil, err
	}
	h.(*server).testEngine = e
	return h, nil
}

// SummarizeLeftovers sums leftovers per agent and kind, as GET /api/doctor.
