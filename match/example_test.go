package match_test

import (
	"fmt"
	"slices"

	"github.com/gyrehq/gyre/match"
)

func Example() {
	var x match.Index[string]
	for _, p := range []string{"eu.*.bus.>", "eu.paris.*.42.pos", "us.>"} {
		if err := x.Set(p, "subscribers of "+p); err != nil {
			panic(err)
		}
	}
	got := x.AppendMatches(nil, "eu.paris.bus.42.pos")
	slices.Sort(got)
	for _, v := range got {
		fmt.Println(v)
	}
	fmt.Println(x.Set("eu.*bus", "?"))
	// Output:
	// subscribers of eu.*.bus.>
	// subscribers of eu.paris.*.42.pos
	// match: invalid pattern "eu.*bus": token 2 ("*bus") mixes a wildcard with other characters
}
