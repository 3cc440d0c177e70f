package memory

import "github.com/gyrehq/gyre/broker"

// idemCache remembers the results of publishes made with an idempotency
// key, per channel, until each one's TTL passes. Its owner's lock guards
// it.
type idemCache struct {
	idem      map[string]idemResult
	idemQueue []idemKey // keys in insertion order, for expiry without scanning the map
	idemHead  int
}

type idemResult struct {
	sp      broker.StreamPosition
	expires int64
}

type idemKey struct {
	key     string
	expires int64
}

func (c *idemCache) idemLookup(key string, now int64) (broker.StreamPosition, bool) {
	r, ok := c.idem[key]
	if !ok || r.expires <= now {
		return broker.StreamPosition{}, false
	}
	return r.sp, true
}

func (c *idemCache) idemStore(key string, sp broker.StreamPosition, expires int64) {
	if c.idem == nil {
		c.idem = make(map[string]idemResult)
	}
	c.idem[key] = idemResult{sp: sp, expires: expires}
	c.idemQueue = append(c.idemQueue, idemKey{key: key, expires: expires})
}

// expireIdem drops keys from the front of the insertion queue while they
// have expired. A key stored again after expiring has a newer entry in the
// map, which the older queue item must not remove.
func (c *idemCache) expireIdem(now int64) {
	for c.idemHead < len(c.idemQueue) && c.idemQueue[c.idemHead].expires <= now {
		k := c.idemQueue[c.idemHead]
		if r, ok := c.idem[k.key]; ok && r.expires == k.expires {
			delete(c.idem, k.key)
		}
		c.idemQueue[c.idemHead] = idemKey{}
		c.idemHead++
	}
	switch {
	case c.idemHead == len(c.idemQueue):
		c.idemQueue, c.idemHead = c.idemQueue[:0], 0
		if len(c.idem) == 0 {
			c.idem, c.idemQueue = nil, nil
		}
	case c.idemHead > len(c.idemQueue)/2:
		n := copy(c.idemQueue, c.idemQueue[c.idemHead:])
		clear(c.idemQueue[n:])
		c.idemQueue, c.idemHead = c.idemQueue[:n], 0
	}
}
