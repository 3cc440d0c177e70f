package config

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// kind is how a field's value is read and written.
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindDuration
	kindStrings       // []string
	kindStringMap     // map[string]string: a table of any keys with string values
	kindStruct        // a table of further keys
	kindStructs       // a list of tables ([]Namespace)
	kindUnimplemented // a known key Gyre ignores
)

var (
	durationType      = reflect.TypeFor[time.Duration]()
	unimplementedType = reflect.TypeFor[Unimplemented]()
)

// field describes one key of a table, read from the struct tags.
type field struct {
	key       string
	def       string
	hasDef    bool
	help      string
	min, max  string
	enum      []string
	precision string
	nonEmpty  bool
	// instead, from the unsupported tag, says what to do instead of a key
	// Gyre does not honour: an Unimplemented key, or a typed key that is
	// parsed and validated but has no effect yet.
	instead string
	// refused, from the refused tag, says what to do instead of a
	// Centrifugo key whose value other than the zero one Validate refuses:
	// ignoring it would change what the configuration asks for.
	refused string
	// anyValue marks an Unimplemented key holding a map of values (fixed
	// headers, say) rather than a feature's table: any entry is in effect.
	anyValue bool
	index    []int
	typ      reflect.Type
	kind     kind
}

var schemaCache sync.Map // reflect.Type -> []field

// fieldsOf lists the keys of a table type in declaration order, with the
// fields of untagged embedded structs inlined.
func fieldsOf(t reflect.Type) []field {
	if v, ok := schemaCache.Load(t); ok {
		return v.([]field)
	}
	var out []field
	collectFields(t, nil, &out)
	schemaCache.Store(t, out)
	return out
}

func collectFields(t reflect.Type, index []int, out *[]field) {
	for i := range t.NumField() {
		sf := t.Field(i)
		idx := append(slices.Clone(index), i)
		key := sf.Tag.Get("key")
		if sf.Anonymous && key == "" {
			collectFields(sf.Type, idx, out)
			continue
		}
		if key == "" || !sf.IsExported() {
			continue
		}
		def, hasDef := sf.Tag.Lookup("default")
		f := field{
			key:       key,
			def:       def,
			hasDef:    hasDef,
			help:      sf.Tag.Get("help"),
			min:       sf.Tag.Get("min"),
			max:       sf.Tag.Get("max"),
			precision: sf.Tag.Get("precision"),
			nonEmpty:  sf.Tag.Get("nonempty") == "true",
			instead:   sf.Tag.Get("unsupported"),
			refused:   sf.Tag.Get("refused"),
			anyValue:  sf.Tag.Get("effect") == "any",
			index:     idx,
			typ:       sf.Type,
			kind:      kindOf(sf.Type),
		}
		if e, ok := sf.Tag.Lookup("enum"); ok {
			f.enum = strings.Split(e, ",")
		}
		*out = append(*out, f)
	}
}

func kindOf(t reflect.Type) kind {
	switch {
	case t == durationType:
		return kindDuration
	case t == unimplementedType:
		return kindUnimplemented
	}
	switch t.Kind() {
	case reflect.String:
		return kindString
	case reflect.Bool:
		return kindBool
	case reflect.Int, reflect.Int64:
		return kindInt
	case reflect.Struct:
		return kindStruct
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			return kindStringMap
		}
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.String:
			return kindStrings
		case reflect.Struct:
			return kindStructs
		}
	}
	panic("config: unsupported field type " + t.String())
}

// lookupField finds the key of a table, ignoring case as Centrifugo does.
func lookupField(t reflect.Type, key string) (field, bool) {
	for _, f := range fieldsOf(t) {
		if strings.EqualFold(f.key, key) {
			return f, true
		}
	}
	return field{}, false
}

// walkLeaves calls fn for every key that is not a table, depth first in
// declaration order. Lists of tables are leaves.
func walkLeaves(t reflect.Type, path string, fn func(path string, f field)) {
	for _, f := range fieldsOf(t) {
		p := joinPath(path, f.key)
		if f.kind == kindStruct {
			walkLeaves(f.typ, p, fn)
			continue
		}
		fn(p, f)
	}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
