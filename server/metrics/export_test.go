package metrics

import "time"

// NewWithClock is New with the clock the Centrifugo summaries' windows
// read.
func NewWithClock(opts Options, now func() time.Time) *Metrics {
	m := New(opts)
	if m.compat != nil {
		m.compat = newCentrifugoView(now, opts.RecoveredPublicationsHistogram)
	}
	return m
}
