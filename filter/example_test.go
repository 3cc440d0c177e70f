package filter_test

import (
	"fmt"

	"github.com/gyrehq/gyre/filter"
)

func Example() {
	tree, err := filter.Parse(`event_type == "goal" || (event_type == "shot" && xG >= 0.8)`)
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := filter.Compile(tree, filter.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Match(map[string]string{"event_type": "shot", "xG": "0.85"}))
	fmt.Println(f.Match(map[string]string{"event_type": "shot", "xG": "0.5"}))
	fmt.Println(f.Match(map[string]string{"event_type": "goal"}))
	// Output:
	// true
	// false
	// true
}

func ExampleParse_error() {
	_, err := filter.Parse(`ticker in ("GOOG" "AAPL")`)
	fmt.Println(err)
	// Output:
	// filter: syntax error at offset 18: found "\"AAPL\""; expected "," or ")"
}

func ExampleFormat() {
	tree, _ := filter.Parse(`((a == "1") || b == "2") && !(exists(c))`)
	fmt.Println(filter.Format(tree))
	// Output:
	// (a == "1" || b == "2") && !(exists(c))
}

func ExampleTreeJSON() {
	tree, _ := filter.Parse(`ticker in ("GOOG", "AAPL") && price >= 99.5`)
	js, _ := filter.TreeJSON(tree)
	fmt.Println(string(js))
	// Output:
	// {"op":"and","nodes":[{"key":"ticker","cmp":"in","vals":["GOOG","AAPL"]},{"key":"price","cmp":"gte","val":"99.5"}]}
}

// A filter the server enforces (from a subscription token, say) is combined with the
// one the client asked for; the client's can only narrow what the server allows.
func ExampleAnd() {
	server, _ := filter.Parse(`team == "engineering"`)
	client, _ := filter.Parse(`level >= 5`)
	fs, _ := filter.Compile(server, filter.Unlimited)
	fc, _ := filter.Compile(client, filter.Limits{})
	f := filter.And(fs, fc)
	fmt.Println(f.Match(map[string]string{"team": "engineering", "level": "7"}))
	fmt.Println(f.Match(map[string]string{"team": "sales", "level": "7"}))
	// Output:
	// true
	// false
}

func ExampleCompile_invalid() {
	tree, _ := filter.Parse(`a == "1"`)
	tree.Cmp = "like"
	_, err := filter.Compile(tree, filter.Limits{})
	fmt.Println(err)
	// Output:
	// filter: invalid filter: root: unknown cmp "like"
}
