package gyre

import (
	"runtime/metrics"
	"sync"
	"time"
)

// loadMeter measures, at each announce, the node's publish rate since the
// previous one and the memory the process holds, for NodeInfo.
type loadMeter struct {
	mu          sync.Mutex
	lastCount   int64
	lastAt      time.Time
	rate        float64
	memoryBytes uint64
	samples     []metrics.Sample
}

// measure takes the publication counter's value now.
func (m *loadMeter) measure(count int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if !m.lastAt.IsZero() {
		if d := now.Sub(m.lastAt).Seconds(); d > 0 {
			m.rate = float64(count-m.lastCount) / d
		}
	}
	m.lastCount, m.lastAt = count, now
	// runtime/metrics reads without stopping the world, unlike
	// runtime.ReadMemStats.
	if m.samples == nil {
		m.samples = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	}
	metrics.Read(m.samples)
	total, released := m.samples[0].Value, m.samples[1].Value
	if total.Kind() == metrics.KindUint64 && released.Kind() == metrics.KindUint64 {
		m.memoryBytes = total.Uint64() - released.Uint64()
	}
}

// get returns what the last measure found.
func (m *loadMeter) get() (rate float64, memoryBytes uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rate, m.memoryBytes
}
