package memory

import "github.com/gyrehq/gyre/broker"

// histEntry is one stored publication and the moment (Unix nanoseconds) it
// expires.
type histEntry struct {
	pub     *broker.Publication
	expires int64
}

// ring holds a stream's stored publications, oldest first. Its offsets are
// consecutive: every publish with history appends offset top+1, and
// entries leave only from the front (eviction, expiry) or all at once
// (RemoveHistory, stream loss), so the entry with offset o sits at index
// o - first offset. The buffer grows on demand up to the history size, so a
// large HistorySize costs nothing until publications arrive.
type ring struct {
	buf  []histEntry
	head int // index in buf of the oldest entry
	n    int
}

func (r *ring) len() int { return r.n }

// at returns the i-th oldest entry.
func (r *ring) at(i int) *histEntry {
	return &r.buf[(r.head+i)%len(r.buf)]
}

// push appends e, keeping at most size entries.
func (r *ring) push(e histEntry, size int) {
	for r.n >= size {
		r.popFront()
	}
	if r.n == len(r.buf) {
		r.grow(min(size, max(4, 2*len(r.buf))))
	}
	r.buf[(r.head+r.n)%len(r.buf)] = e
	r.n++
	if len(r.buf) > 2*size && len(r.buf) > 4 {
		// The history size shrank; give the memory back.
		r.grow(size)
	}
}

// grow moves the entries, oldest first, into a buffer of capacity c >= n.
func (r *ring) grow(c int) {
	buf := make([]histEntry, c)
	for i := range r.n {
		buf[i] = *r.at(i)
	}
	r.buf, r.head = buf, 0
}

func (r *ring) popFront() {
	*r.at(0) = histEntry{} // let the publication be collected
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// dropExpired removes expired entries from the front. Entries stored with
// a shorter TTL than an older one may expire behind a live front entry;
// readers skip those until they reach the front.
func (r *ring) dropExpired(now int64) {
	for r.n > 0 && r.at(0).expires <= now {
		r.popFront()
	}
}

func (r *ring) reset() {
	*r = ring{}
}
