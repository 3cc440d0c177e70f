package config

import (
	"reflect"
	"strconv"
)

// Changed lists the keys whose values differ between a and b, each as its
// path ("client.proxy.connect.endpoint", "channel.namespaces[1].presence").
// Items of lists of tables are compared key by key, an item missing on one
// side as the zero value; keys Gyre does not implement are left out (they
// are reported when loaded).
func Changed(a, b *Config) []string {
	var out []string
	changedIn(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "", &out)
	return out
}

func changedIn(a, b reflect.Value, path string, out *[]string) {
	for _, f := range fieldsOf(a.Type()) {
		p := joinPath(path, f.key)
		av, bv := a.FieldByIndex(f.index), b.FieldByIndex(f.index)
		switch f.kind {
		case kindUnimplemented:
		case kindStruct:
			changedIn(av, bv, p, out)
		case kindStructs:
			zero := reflect.New(f.typ.Elem()).Elem()
			for i := range max(av.Len(), bv.Len()) {
				ai, bi := zero, zero
				if i < av.Len() {
					ai = av.Index(i)
				}
				if i < bv.Len() {
					bi = bv.Index(i)
				}
				changedIn(ai, bi, p+"["+strconv.Itoa(i)+"]", out)
			}
		default:
			if !equalValues(av, bv) {
				*out = append(*out, p)
			}
		}
	}
}
