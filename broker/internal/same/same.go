// Package same tells whether two values are the same one, not equal
// copies: a broadcast passes one data slice and one tags map for all its
// channels, and what a broker makes of them for one item serves the next.
package same

import (
	"reflect"
	"unsafe"
)

// Bytes reports whether a and b are the same slice: same start and
// length, so the same bytes while neither is written to. Empty slices are
// all the same.
func Bytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// Map reports whether a and b are the same map (empty maps are all the
// same); equal contents in two maps do not count.
func Map(a, b map[string]string) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer())
}
