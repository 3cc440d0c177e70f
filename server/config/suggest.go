package config

import (
	"reflect"
	"strings"
)

// didYouMean returns ` (did you mean "KEY"?)` naming the known key of the
// struct type t closest to the unknown key, or "" when none is close enough
// to be a likely misspelling.
func didYouMean(t reflect.Type, key string) string {
	var keys []string
	for _, f := range fieldsOf(t) {
		keys = append(keys, f.key)
	}
	// Keys are short: within a third of the key's length, at most 3.
	if best := closest(key, keys, min(max(len(key)/3, 1), 3)); best != "" {
		return ` (did you mean "` + best + `"?)`
	}
	return ""
}

// closest is the candidate nearest to s by edit distance (case ignored),
// if it is within limit edits: a typo, not another word. Ties go to the
// first candidate.
func closest(s string, candidates []string, limit int) string {
	s = strings.ToLower(s)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(s, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) between a and b: insertions, deletions, substitutions and
// swaps of two neighbours each cost one.
func editDistance(a, b string) int {
	ar, br := []rune(a), []rune(b)
	// rows[i][j] is the distance between ar[:i] and br[:j].
	rows := make([][]int, len(ar)+1)
	for i := range rows {
		rows[i] = make([]int, len(br)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(ar); i++ {
		for j := 1; j <= len(br); j++ {
			cost := 1
			if ar[i-1] == br[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && ar[i-1] == br[j-2] && ar[i-2] == br[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(ar)][len(br)]
}
