package match

import (
	"fmt"
	"runtime"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats-server/v2/server/gsl"

	gyre "github.com/gyrehq/gyre/match"
)

// side is one index under measurement, loaded with the patterns of a
// workload; pattern i is set and deleted by its number. Match must do what
// delivery would need: find every matching subscription.
type side interface {
	set(i int)
	del(i int)
	match(topic string)
	count(topic string) int // matches of topic, for the agreement test
}

type sideMaker struct {
	name string
	make func(patterns []string) side
}

var sides = []sideMaker{
	{"gyre", newGyre},
	{"nats-nocache", func(p []string) side { return newNATS(p, server.NewSublistNoCache()) }},
	{"nats-cache", func(p []string) side { return newNATS(p, server.NewSublistWithCache()) }},
	{"nats-gsl", newGSL},
}

type gyreSide struct {
	x        *gyre.Index[int]
	patterns []string
	matches  int
	fn       func(int) bool
}

func newGyre(patterns []string) side {
	s := &gyreSide{x: gyre.NewIndex[int](), patterns: patterns}
	s.fn = func(int) bool { s.matches++; return true }
	return s
}

func (s *gyreSide) set(i int) {
	if err := s.x.Set(s.patterns[i], i); err != nil {
		panic(err)
	}
}
func (s *gyreSide) del(i int)          { s.x.Delete(s.patterns[i]) }
func (s *gyreSide) match(topic string) { s.x.Match(topic, s.fn) }
func (s *gyreSide) count(topic string) int {
	n := 0
	s.x.Match(topic, func(int) bool { n++; return true })
	return n
}

type natsSide struct {
	sl   Sublist
	subs []Subscription
	last *server.SublistResult
}

func newNATS(patterns []string, sl *server.Sublist) side {
	s := &natsSide{sl: Sublist{sl}, subs: make([]Subscription, len(patterns))}
	for i, p := range patterns {
		s.subs[i] = NewSubscription(p)
	}
	return s
}

func (s *natsSide) set(i int) {
	if err := s.sl.Insert(s.subs[i]); err != nil {
		panic(err)
	}
}
func (s *natsSide) del(i int)              { _ = s.sl.Remove(s.subs[i]) }
func (s *natsSide) match(topic string)     { s.last = s.sl.Match(topic) }
func (s *natsSide) count(topic string) int { return Matches(s.sl.Match(topic)) }

type gslSide struct {
	sl       *gsl.GenericSublist[int]
	patterns []string
	matches  int
	fn       func(int)
}

func newGSL(patterns []string) side {
	s := &gslSide{sl: gsl.NewSublist[int](), patterns: patterns}
	s.fn = func(int) { s.matches++ }
	return s
}

func (s *gslSide) set(i int) {
	if err := s.sl.Insert(s.patterns[i], i); err != nil {
		panic(err)
	}
}
func (s *gslSide) del(i int)          { _ = s.sl.Remove(s.patterns[i], i) }
func (s *gslSide) match(topic string) { s.sl.Match(topic, s.fn) }
func (s *gslSide) count(topic string) int {
	n := 0
	s.sl.Match(topic, func(int) { n++ })
	return n
}

// loaded returns a side of patterns with the first n set.
func loaded(mk sideMaker, patterns []string, n int) side {
	s := mk.make(patterns)
	for i := range n {
		s.set(i)
	}
	return s
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func sizeName(n int) string { return fmt.Sprintf("patterns=%d", n) }
