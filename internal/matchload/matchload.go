// Package matchload generates the workload that package match is measured
// with, here and against NATS's Sublist in the bench/match module, so that
// both sides see the same patterns and topics.
//
// Topics have five tokens, one per level of the vocabulary below (region,
// city, mode of transport, vehicle, field: "eu.paris.bus.7.pos"); 10 × 16 ×
// 12 × 20 × 16 = 614,400 distinct topics. Patterns are drawn with a fixed
// seed:
//
//   - 10 % end with ">" after 2, 3 or 4 tokens;
//   - the others have five tokens;
//   - each token before the end is "*" with probability 0.1, else a word of
//     its level drawn uniformly; a five-token pattern without a "*" is drawn
//     again, since a pattern has a wildcard by definition.
//
// Of 1,000 patterns, 9 % end with ">"; of 100,000, 6.6 % (short prefixes
// run out of distinct patterns) and 23 % of all tokens are "*" (the test
// logs the shares). Half the topics are made from a pattern drawn
// from the set (its wildcards filled with words of their levels), so they
// match at least that pattern; the other half are drawn uniformly, and
// mostly match nothing when there are few patterns.
package matchload

import (
	"math/rand/v2"
	"strings"
)

// Depth is the number of tokens in a topic.
const Depth = 5

// Vocabulary holds the words of each level of a topic.
var Vocabulary = [Depth][]string{
	{"eu", "us", "ca", "br", "mx", "in", "jp", "au", "za", "ng"},
	{"paris", "berlin", "madrid", "rome", "london", "vienna", "prague", "warsaw",
		"lisbon", "dublin", "oslo", "lyon", "milan", "munich", "porto", "krakow"},
	{"bus", "tram", "metro", "train", "ferry", "taxi", "bike", "scooter", "van",
		"truck", "coach", "shuttle"},
	{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14",
		"15", "16", "17", "18", "19", "20"},
	{"pos", "speed", "door", "temp", "fuel", "eta", "load", "alarm", "status",
		"stop", "route", "driver", "battery", "wifi", "seat", "light"},
}

// Patterns returns n distinct patterns drawn from seed. A larger n drawn
// from the same seed starts with the same patterns.
func Patterns(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 0x6d61746368))
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		p := pattern(rng)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func pattern(rng *rand.Rand) string {
	var toks [Depth]string
	n := Depth
	if rng.IntN(10) == 0 {
		n = 2 + rng.IntN(3)
	}
	for {
		wildcard := false
		for i := range n {
			if rng.IntN(10) == 0 {
				toks[i], wildcard = "*", true
			} else {
				toks[i] = word(rng, i)
			}
		}
		if n < Depth {
			return strings.Join(toks[:n], ".") + ".>"
		}
		if wildcard {
			return strings.Join(toks[:], ".")
		}
	}
}

func word(rng *rand.Rand, level int) string {
	words := Vocabulary[level]
	return words[rng.IntN(len(words))]
}

// Topics returns n topics drawn from seed: even ones made from a random
// pattern of patterns, odd ones drawn uniformly.
func Topics(n int, patterns []string, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 0x746f706963))
	out := make([]string, n)
	var toks [Depth]string
	for i := range out {
		for level := range toks {
			toks[level] = word(rng, level)
		}
		if i%2 == 0 && len(patterns) > 0 {
			// Keep the pattern's literal tokens; "*" and ">" keep the
			// random words drawn above.
			p := patterns[rng.IntN(len(patterns))]
			for level, tok := range strings.Split(p, ".") {
				if tok != "*" && tok != ">" {
					toks[level] = tok
				}
			}
		}
		out[i] = strings.Join(toks[:], ".")
	}
	return out
}
