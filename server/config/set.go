package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Set sets one key from its text form, as given on the command line, e.g.
// Set("http_server.port", "9000"). Paths use the file's key names joined by
// dots; an element of a list of tables is addressed by index, as in
// channel.namespaces[0].presence. Lists take a JSON array or items separated
// by commas or spaces; a table or a list of tables takes JSON. Set does not
// validate.
func (c *Config) Set(path, value string) error {
	unimplemented, err := c.set(path, value)
	if err != nil {
		return err
	}
	if len(unimplemented) > 0 {
		return errors.New(strings.Join(unsupportedWarnings(unimplemented), "; "))
	}
	return nil
}

// set is Set returning the unimplemented keys in effect inside a JSON
// value apart from errors.
func (c *Config) set(path, value string) ([]UnsupportedKey, error) {
	v, f, canon, err := resolve(reflect.ValueOf(c).Elem(), path)
	if err != nil {
		return nil, keyErr(path, err)
	}
	return setString(v, f, canon, value)
}

// SetAll applies Set to every entry, in path order so that a whole list
// comes before its elements' keys. It reports every failing entry.
func (c *Config) SetAll(values map[string]string) error {
	paths := make([]string, 0, len(values))
	for p := range values {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var errs []error
	for _, p := range paths {
		if err := c.Set(p, values[p]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resolve finds the field a path names and the path spelled canonically.
func resolve(root reflect.Value, path string) (reflect.Value, field, string, error) {
	cur := root
	var f field
	canon := ""
	for seg := range strings.SplitSeq(path, ".") {
		name, idx, indexed, err := parseSegment(seg)
		if err != nil {
			return reflect.Value{}, field{}, "", err
		}
		if cur.Kind() != reflect.Struct {
			return reflect.Value{}, field{}, "", fmt.Errorf("%w: %s is not a table", ErrUnknownKey, canon)
		}
		var ok bool
		if f, ok = lookupField(cur.Type(), name); !ok {
			return reflect.Value{}, field{}, "", ErrUnknownKey
		}
		canon = joinPath(canon, f.key)
		cur = cur.FieldByIndex(f.index)
		if !indexed {
			continue
		}
		if f.kind != kindStructs {
			return reflect.Value{}, field{}, "", fmt.Errorf("%s is not a list of tables", canon)
		}
		if idx >= cur.Len() {
			return reflect.Value{}, field{}, "", fmt.Errorf("index %d out of range: %s has %d items", idx, canon, cur.Len())
		}
		cur = cur.Index(idx)
		canon += "[" + strconv.Itoa(idx) + "]"
		f = field{key: f.key, typ: cur.Type(), kind: kindStruct}
	}
	return cur, f, canon, nil
}

// parseSegment splits "namespaces[2]" into its name and index.
func parseSegment(seg string) (name string, idx int, indexed bool, err error) {
	open := strings.IndexByte(seg, '[')
	if open < 0 {
		if seg == "" {
			return "", 0, false, errors.New("empty key in path")
		}
		return seg, 0, false, nil
	}
	if !strings.HasSuffix(seg, "]") || open == 0 {
		return "", 0, false, fmt.Errorf("malformed path segment %q", seg)
	}
	idx, err = strconv.Atoi(seg[open+1 : len(seg)-1])
	if err != nil || idx < 0 {
		return "", 0, false, fmt.Errorf("malformed index in %q", seg)
	}
	return seg[:open], idx, true, nil
}

// setString stores the text form of a value into the field v at path. The
// errors it returns name the path.
func setString(v reflect.Value, f field, path, s string) ([]UnsupportedKey, error) {
	switch f.kind {
	case kindUnimplemented:
		return nil, keyErr(path, ErrNotImplemented)
	case kindStrings:
		list, err := splitList(s)
		if err != nil {
			return nil, keyErr(path, err)
		}
		setList(v, list)
		return nil, nil
	case kindStruct:
		return setJSON(v, f, path, s, "{")
	case kindStructs:
		if strings.HasPrefix(strings.TrimSpace(s), "[") {
			return setJSON(v, f, path, s, "[")
		}
		return nil, setNamed(v, path, s)
	}
	if err := setScalar(v, f.kind, s); err != nil {
		return nil, keyErr(path, err)
	}
	return nil, nil
}

// setJSON stores a table or a list of tables given as JSON. Unknown keys in
// it are errors: there is no file to warn about.
func setJSON(v reflect.Value, f field, path, s, opening string) ([]UnsupportedKey, error) {
	trimmed := strings.TrimSpace(s)
	if !strings.HasPrefix(trimmed, opening) {
		return nil, keyErr(path, fmt.Errorf("expected JSON starting with %q, got %q", opening, s))
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.UseNumber() // keep integers exact, as parse does
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, keyErr(path, fmt.Errorf("invalid JSON: %w", err))
	}
	// Decode into a copy so that a failed value leaves the field untouched.
	tmp := reflect.New(v.Type()).Elem()
	tmp.Set(v)
	d := &decoder{strict: true}
	if f.kind == kindStructs {
		d.tables(path, tmp, tree)
	} else {
		d.table(path, tmp, tree)
	}
	if err := d.err(); err != nil {
		return d.unimplemented, err
	}
	v.Set(tmp)
	return d.unimplemented, nil
}

// setNamed sets a list of tables from names alone ("chat news" or
// "chat,news"), as Centrifugo allows for namespaces in the environment.
// Elements whose name was already there keep their options; new ones start
// from their defaults.
func setNamed(v reflect.Value, path, s string) error {
	names, err := splitList(s)
	if err != nil {
		return keyErr(path, err)
	}
	nameField, ok := lookupField(v.Type().Elem(), "name")
	if !ok {
		return keyErr(path, errors.New("items have no name"))
	}
	if len(names) == 0 {
		v.SetZero()
		return nil
	}
	out := reflect.MakeSlice(v.Type(), len(names), len(names))
	for i, name := range names {
		elem := out.Index(i)
		if old, found := findNamed(v, nameField, name); found {
			elem.Set(old)
			continue
		}
		applyDefaults(elem)
		elem.FieldByIndex(nameField.index).SetString(name)
	}
	v.Set(out)
	return nil
}

func findNamed(list reflect.Value, nameField field, name string) (reflect.Value, bool) {
	for i := range list.Len() {
		if list.Index(i).FieldByIndex(nameField.index).String() == name {
			return list.Index(i), true
		}
	}
	return reflect.Value{}, false
}
