package api

import (
	"time"

	"github.com/gyrehq/gyre/internal/faillog"
)

// FailureLogBurst is how many failures of a kind are logged one by one in
// a window.
const FailureLogBurst = faillog.Burst

// SetFailureLogWindow sets the window of h's failure log; call it before
// the first request.
func SetFailureLogWindow(h *Handler, d time.Duration) { h.exec.fails.SetWindow(d) }

// FlushFailureLogs writes the failure summaries due, as the end of their
// window would.
func FlushFailureLogs(h *Handler) { h.exec.fails.FlushAll() }

// MethodNames are the names of the API's methods.
func MethodNames() []string {
	var names []string
	for _, m := range Methods() {
		names = append(names, m.Name)
	}
	return names
}
