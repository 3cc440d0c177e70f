package config

import (
	"fmt"
	"reflect"
	"strconv"
)

// UnsupportedKey is a key that is set to a value that would change what
// Centrifugo does, while Gyre ignores it.
type UnsupportedKey struct {
	// Path names the key, e.g. "websocket.write_buffer_size" or
	// "channel.namespaces[2].subscription_type".
	Path string
	// Instead says what to do instead.
	Instead string
}

func (k UnsupportedKey) String() string {
	if k.Instead == "" {
		return k.Path + " is not supported by Gyre"
	}
	return k.Path + " is not supported by Gyre: " + k.Instead
}

// Unsupported lists the keys of c that Gyre does not honour but that are
// set so that they would change behaviour: an Unimplemented key in effect
// (see inEffect), or a key tagged unsupported whose value differs from its
// default. A configuration dumped from Centrifugo's defaults has none.
// The server warns about each at start-up; checkconfig refuses them unless
// told to let them through.
func (c *Config) Unsupported() []UnsupportedKey {
	var out []UnsupportedKey
	unsupportedIn(reflect.ValueOf(c).Elem(), "", &out)
	return out
}

func unsupportedIn(v reflect.Value, path string, out *[]UnsupportedKey) {
	for _, f := range fieldsOf(v.Type()) {
		p := joinPath(path, f.key)
		fv := v.FieldByIndex(f.index)
		switch {
		case f.kind == kindUnimplemented:
			if inEffect(f, fv.Interface().(Unimplemented).value) {
				*out = append(*out, UnsupportedKey{Path: p, Instead: f.instead})
			}
		case f.instead != "" && f.kind != kindStruct:
			if !atDefault(fv, f) {
				*out = append(*out, UnsupportedKey{Path: p, Instead: f.instead})
			}
		case f.kind == kindStruct:
			// A table whose keys only matter together says itself what
			// it cannot honour (Broker: the nats type switched on).
			if u, ok := fv.Interface().(interface {
				unsupported(string) []UnsupportedKey
			}); ok {
				*out = append(*out, u.unsupported(p)...)
			}
			unsupportedIn(fv, p, out)
		case f.kind == kindStructs:
			for i := range fv.Len() {
				unsupportedIn(fv.Index(i), p+"["+strconv.Itoa(i)+"]", out)
			}
		}
	}
}

// atDefault reports whether the field holds its default value (the zero
// value when it has none).
func atDefault(v reflect.Value, f field) bool {
	def := reflect.New(v.Type()).Elem()
	if f.hasDef {
		if _, err := setString(def, f, f.key, f.def); err != nil {
			panic(fmt.Sprintf("config: bad default of %s: %v", f.key, err))
		}
	}
	return reflect.DeepEqual(v.Interface(), def.Interface())
}

// unsupportedWarning is the start-up warning about a key Gyre ignores;
// from, when not empty, names the environment variable that set it.
func unsupportedWarning(path, instead, from string) string {
	msg := fmt.Sprintf("config: key %q is not implemented by Gyre and is ignored", path)
	if from != "" {
		msg += " (set by " + from + ")"
	}
	if instead != "" {
		msg += ": " + instead
	}
	return msg
}

// unsupportedWarnings are the warnings of keys no variable set.
func unsupportedWarnings(keys []UnsupportedKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = unsupportedWarning(k.Path, k.Instead, "")
	}
	return out
}
