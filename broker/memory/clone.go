package memory

import (
	"maps"

	"github.com/gyrehq/gyre/broker"
)

// clonePublications replaces each element of pubs by a deep copy, so that
// callers cannot reach stored values, and returns pubs. The copies share a few backing allocations (structs, infos, one
// byte arena) instead of several per publication; each byte slice is
// capped so that appending to one cannot write into its neighbour.
func clonePublications(pubs []*broker.Publication) []*broker.Publication {
	if len(pubs) == 0 {
		return nil
	}
	size, infos := 0, 0
	for _, p := range pubs {
		size += len(p.Data)
		if p.Info != nil {
			infos++
			size += len(p.Info.ConnInfo) + len(p.Info.ChanInfo)
		}
	}
	a := arena{buf: make([]byte, 0, size)}
	structs := make([]broker.Publication, len(pubs))
	infoStructs := make([]broker.ClientInfo, infos)
	for i, p := range pubs {
		c := &structs[i]
		*c = *p
		c.Data = a.copy(p.Data)
		c.Tags = maps.Clone(p.Tags)
		if p.Info != nil {
			ci := &infoStructs[0]
			infoStructs = infoStructs[1:]
			*ci = *p.Info
			ci.ConnInfo = a.copy(p.Info.ConnInfo)
			ci.ChanInfo = a.copy(p.Info.ChanInfo)
			c.Info = ci
		}
		pubs[i] = c
	}
	return pubs
}

// arena hands out capped sub-slices of one buffer allocated up front.
type arena struct{ buf []byte }

func (a *arena) copy(b []byte) []byte {
	if b == nil {
		return nil
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}
