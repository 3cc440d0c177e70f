package fossil_test

import (
	"fmt"

	"github.com/gyrehq/gyre/delta/fossil"
)

func Example() {
	prev := []byte(`{"ticker":"GOOG","price":101.25,"volume":1200,"venue":"NASDAQ","currency":"USD"}`)
	next := []byte(`{"ticker":"GOOG","price":101.50,"volume":1300,"venue":"NASDAQ","currency":"USD"}`)

	d := fossil.Create(prev, next)
	got, err := fossil.Apply(prev, d)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(got) == string(next), len(d) < len(next))
	// Output: true true
}

func ExampleAppendCreate() {
	prev := []byte(`{"score":[3,1],"minute":54,"home":"Arsenal","away":"Chelsea"}`)
	next := []byte(`{"score":[3,2],"minute":57,"home":"Arsenal","away":"Chelsea"}`)

	buf := make([]byte, 0, 256) // kept between publications
	buf = fossil.AppendCreate(buf[:0], prev, next)
	// Target length 61 ("y"), an insert of the first 26 bytes, which hold both changes
	// ("Q:"), a copy of the other 35 bytes from offset 26 of prev ("Z@Q,"), and the
	// checksum. Unchanged runs shorter than 16 bytes are not worth a copy.
	fmt.Printf("%q\n", buf)
	// Output: "y\nQ:{\"score\":[3,2],\"minute\":57Z@Q,2SBOFq;"
}
