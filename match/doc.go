// Package match indexes wildcard subscriptions (patterns) and finds, for a
// channel name (a topic), every pattern that matches it. Gyre keeps an
// [Index] per namespace that allows pattern subscriptions, from each pattern
// to its group of subscribers, and asks it for every publication.
//
//	var x match.Index[*Group]
//	err := x.Set("eu.*.bus.>", group)
//	x.Match("eu.paris.bus.42.pos", func(g *Group) bool { g.deliver(pub); return true })
//
// The package depends on the standard library only.
//
// # Syntax
//
// Names are tokens separated by '.', as in NATS subjects. A pattern is a name
// with at least one wildcard token:
//
//	"*"  matches exactly one token: any, the empty one included
//	">"  only as the last token: matches one or more tokens
//
// Every other token is a literal and matches the equal token, byte for byte.
// '*' and '>' are wildcards only as whole tokens: "a.b*" is not a valid
// pattern (see [ValidPattern]), and [IsPattern] tells a name that is meant as
// a pattern (it has a '*' or '>' anywhere) from a plain one.
//
//	pattern          matches                          does not match
//	eu.*.bus.>       eu.paris.bus.42, eu..bus.1.pos   eu.paris.bus, us.paris.bus.42
//	*.*.tram.*.pos   eu.lyon.tram.7.pos               eu.lyon.tram.7.pos.x
//	>                any topic                        (nothing)
//
// A topic is any string, split on '.' (so "" is one empty token and "a." is
// "a" and ""). A '*' or '>' in a topic is an ordinary character, matched by
// the wildcards as any token is and by no literal; the engine refuses them
// in the names of channels published to.
//
// # Concurrency
//
// [Index.Match], [Index.AppendMatches], [Index.Get] and [Index.Len] never
// block and never allocate, whatever writers do. [Index.Set] and
// [Index.Delete] take a mutex among themselves and publish each change with
// atomic stores into the nodes and table slots they change; nothing is
// copied but a table of children that fills up or empties out, rebuilt at
// a doubling or a halving, so a write never stops a reader and costs, on
// average, the same whatever the number of siblings. A Match sees every
// pattern that is present for its whole call, each at most once; a pattern
// set or deleted during the call may or may not be seen.
//
// # Performance and memory
//
// The index is a trie over tokens: the work of a Match grows with the
// number of nodes that can match the topic, not with the number of patterns.
// Each node's literal children are in a small hash table probed without
// locks. Delete prunes the nodes it leaves empty and shrinks tables that
// churn has thinned, so an index under churn does not grow. With the
// workload of docs/benchmarks.md ("Pattern matching"), on 2 cores: Match
// about 0.25 µs with 1,000 patterns and 1 µs with 100,000 (33 matches per
// topic), Set 0.3 µs, Delete 0.2 µs, and about 120 bytes of heap per
// pattern besides the values.
package match
