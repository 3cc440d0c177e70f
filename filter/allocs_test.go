package filter

import "testing"

// TestMatchAllocations holds Match to its budget: nothing, for every kind of node,
// since it runs once per subscriber on every broadcast.
func TestMatchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	exprs := []string{
		`event_type == "goal"`,
		`count > 42 && price >= 99.5 && ticker contains "GOO"`,
		`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`,
		`ticker in ("A", "B", "C", "D", "E", "F", "G", "H", "I", "GOOG")`,
		`ticker not in ("A", "B") && !exists(region) && ticker startswith "G" && ticker endswith "G"`,
		`count == 42 || count != 1e3 || price < -1 || price <= 0.5`,
		`price > 1 && word > 1 && nope > 1`,
	}
	tags := map[string]string{"event_type": "shot", "xG": "0.85", "count": "43", "price": "99.50",
		"ticker": "GOOG", "word": "abc"}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			f := mustCompile(t, mustParse(t, expr))
			if n := testing.AllocsPerRun(100, func() { f.Match(tags) }); n != 0 {
				t.Errorf("Match allocates %v times", n)
			}
		})
	}
}
