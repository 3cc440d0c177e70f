// Package condwait waits on a sync.Cond with a time limit: the loop that
// tests use to wait for what a background reader records.
package condwait

import (
	"sync"
	"time"
)

// Until waits until done, called with c.L held, reports true, or limit
// passes, and reports whether done did. done is called again after every
// Broadcast on c. The caller must not hold c.L; Until takes it and
// releases it before returning.
func Until(c *sync.Cond, limit time.Duration, done func() bool) bool {
	expired := false
	timer := time.AfterFunc(limit, func() {
		c.L.Lock()
		expired = true
		c.Broadcast()
		c.L.Unlock()
	})
	defer timer.Stop()
	c.L.Lock()
	defer c.L.Unlock()
	for !done() {
		if expired {
			return false
		}
		c.Wait()
	}
	return true
}
