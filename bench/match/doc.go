// Package match measures Gyre's pattern index (package match) beside NATS's
// subject lists, in a module of its own so that Gyre never requires
// nats-server:
//
//   - server.Sublist, the NATS server's subscription index (a trie of Go
//     maps behind an RWMutex), without and with its match cache
//     (NewSublistNoCache, NewSublistWithCache);
//   - gsl.GenericSublist, the same trie without a cache, generic over the
//     value, with a callback Match like Gyre's.
//
// Every side is given the same patterns and topics, from
// github.com/gyrehq/gyre/internal/matchload. Run from this directory:
//
//	go test -run '^$' -bench . -benchmem
//
// server.Sublist stores *server.subscription, an unexported type with no
// exported constructor. This package makes them with reflect (a zeroed
// subscription whose subject field is set, as the server's own tests do
// with a struct literal) and calls Insert and Remove through function values
// whose parameter type says unsafe.Pointer instead of *subscription (see
// sublist.go). That changes nothing in what the calls do: Insert, Remove and
// Match run unmodified; only the boundary is bridged. A test checks that both
// NATS structures and Gyre agree on the number of matches of every topic.
package match
