package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
)

// decoder stores a parsed file (tables, lists and scalars as produced by the
// JSON, YAML and TOML parsers) into a Config, collecting every error and
// warning instead of stopping at the first.
type decoder struct {
	// warnings name unknown keys.
	warnings []string
	// unimplemented are the Unimplemented keys read with a value in
	// effect. The caller reports them: Resolve once per key, whichever
	// layers set it, from the final configuration.
	unimplemented []UnsupportedKey
	errs          []error
	// strict makes unknown keys errors, where there is no file to warn about.
	strict bool
}

func (d *decoder) fail(path string, err error) {
	d.errs = append(d.errs, keyErr(path, err))
}

func (d *decoder) warn(format string, args ...any) {
	d.warnings = append(d.warnings, fmt.Sprintf(format, args...))
}

func (d *decoder) err() error { return errors.Join(d.errs...) }

// report is every warning of d: unknown keys, then unimplemented ones.
func (d *decoder) report() []string {
	return append(slices.Clone(d.warnings), unsupportedWarnings(d.unimplemented)...)
}

// asTable turns a parsed table into map[string]any; YAML gives map[any]any
// when a key is not a string.
func asTable(raw any) (map[string]any, bool) {
	switch x := raw.(type) {
	case map[string]any:
		return x, true
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[fmt.Sprint(k)] = v
		}
		return m, true
	}
	return nil, false
}

// table stores raw, which must be a table, into the struct v.
func (d *decoder) table(path string, v reflect.Value, raw any) {
	m, ok := asTable(raw)
	if !ok {
		d.fail(path, fmt.Errorf("expected a table, got %s", describe(raw)))
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // report in a stable order
	for _, k := range keys {
		p := joinPath(path, k)
		f, ok := lookupField(v.Type(), k)
		if !ok && d.strict {
			d.fail(p, ErrUnknownKey)
			continue
		}
		if !ok {
			d.warn("config: unknown key %q ignored%s", p, didYouMean(v.Type(), k))
			continue
		}
		d.value(joinPath(path, f.key), f, v.FieldByIndex(f.index), m[k])
	}
}

// value stores one raw value into the field v. A null leaves the field as it
// was, so "key: null" and a missing key mean the same.
func (d *decoder) value(path string, f field, v reflect.Value, raw any) {
	if raw == nil {
		return
	}
	switch f.kind {
	case kindStruct:
		d.table(path, v, raw)
	case kindStructs:
		d.tables(path, v, raw)
	case kindUnimplemented:
		if inEffect(f, raw) {
			d.unimplemented = append(d.unimplemented, UnsupportedKey{Path: path, Instead: f.instead})
		}
		v.Set(reflect.ValueOf(Unimplemented{value: raw}))
	case kindInt, kindBool:
		// Centrifugo reads "" as zero here, and writes internal_port as "".
		if raw == "" {
			v.SetZero()
			return
		}
		if err := setScalar(v, f.kind, raw); err != nil {
			d.fail(path, err)
		}
	default:
		if err := setScalar(v, f.kind, raw); err != nil {
			d.fail(path, err)
		}
	}
}

// tables stores a list of tables into the slice v, each element starting
// from its defaults.
func (d *decoder) tables(path string, v reflect.Value, raw any) {
	list, ok := raw.([]any)
	if !ok {
		d.fail(path, fmt.Errorf("expected a list of tables, got %s", describe(raw)))
		return
	}
	if len(list) == 0 {
		v.SetZero()
		return
	}
	out := reflect.MakeSlice(v.Type(), len(list), len(list))
	for i, item := range list {
		elem := out.Index(i)
		applyDefaults(elem)
		d.table(path+"["+strconv.Itoa(i)+"]", elem, item)
	}
	v.Set(out)
}

// inEffect reports whether the value of an unimplemented key would turn a
// Centrifugo feature on, so that ignoring it deserves a warning. A dumped
// Centrifugo configuration holds every such key at its default: a table
// counts only when it switches something on (a true, or a non-empty list),
// and a scalar only when it differs from its default.
func inEffect(f field, raw any) bool {
	switch raw.(type) {
	case map[string]any, map[any]any, []any:
		if f.anyValue {
			return meaningful(raw)
		}
		return switchedOn(raw)
	}
	if s, err := toString(raw); err == nil && f.hasDef && s == f.def {
		return false
	}
	return meaningful(raw)
}

func switchedOn(raw any) bool {
	switch x := raw.(type) {
	case bool:
		return x
	case []any:
		return meaningful(x)
	}
	if m, ok := asTable(raw); ok {
		for _, v := range m {
			if switchedOn(v) {
				return true
			}
		}
	}
	return false
}
