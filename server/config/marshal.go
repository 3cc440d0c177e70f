package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// Marshal writes every key of the configuration in the given format (json,
// yaml or toml), in declaration order where the format keeps order (JSON,
// YAML; TOML sorts keys). The result loads back to an equal Config. Keys Gyre
// does not implement are left out.
func (c *Config) Marshal(format string) ([]byte, error) {
	return encode(treeOf(reflect.ValueOf(c).Elem(), reflect.Value{}), format)
}

// MarshalNonDefault is Marshal limited to the keys whose value differs from
// Default(): a short file, as genconfig writes.
func (c *Config) MarshalNonDefault(format string) ([]byte, error) {
	base := reflect.ValueOf(Default()).Elem()
	return encode(treeOf(reflect.ValueOf(c).Elem(), base), format)
}

// table is a table whose keys keep their order.
type table struct {
	keys []string
	vals []any // string, bool, int64, []string, *table, []*table
}

func (t *table) add(key string, val any) {
	t.keys = append(t.keys, key)
	t.vals = append(t.vals, val)
}

// treeOf turns the struct v into a table. When base is valid, only keys whose
// value differs from base are kept, and empty tables are dropped.
func treeOf(v, base reflect.Value) *table {
	t := &table{}
	for _, f := range fieldsOf(v.Type()) {
		if f.kind == kindUnimplemented {
			continue
		}
		fv := v.FieldByIndex(f.index)
		var bv reflect.Value
		if base.IsValid() {
			bv = base.FieldByIndex(f.index)
			if f.kind != kindStruct && equalValues(fv, bv) {
				continue
			}
		}
		switch f.kind {
		case kindStruct:
			sub := treeOf(fv, bv)
			if base.IsValid() && len(sub.keys) == 0 {
				continue
			}
			t.add(f.key, sub)
		case kindStructs:
			t.add(f.key, listOf(fv, base.IsValid()))
		default:
			t.add(f.key, leafOf(f.kind, fv))
		}
	}
	return t
}

// listOf turns a list of tables into tables; when short, each keeps only
// the keys that differ from a fresh element's defaults.
func listOf(v reflect.Value, short bool) []*table {
	out := make([]*table, v.Len())
	var base reflect.Value
	if short {
		base = reflect.New(v.Type().Elem()).Elem()
		applyDefaults(base)
	}
	for i := range v.Len() {
		out[i] = treeOf(v.Index(i), base)
	}
	return out
}

func equalValues(a, b reflect.Value) bool {
	if (a.Kind() == reflect.Slice || a.Kind() == reflect.Map) && a.Len() == 0 && b.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

func leafOf(k kind, v reflect.Value) any {
	switch k {
	case kindString:
		return v.String()
	case kindBool:
		return v.Bool()
	case kindInt:
		return v.Int()
	case kindDuration:
		return formatDuration(time.Duration(v.Int()))
	case kindStrings:
		list, _ := v.Interface().([]string)
		if list == nil {
			list = []string{}
		}
		return list
	case kindStringMap:
		// A table, which every format writes; keys sorted for a stable
		// output.
		m, _ := v.Interface().(map[string]string)
		t := &table{keys: slices.Sorted(maps.Keys(m))}
		for _, k := range t.keys {
			t.vals = append(t.vals, m[k])
		}
		return t
	}
	panic("config: no leaf form for kind " + strconv.Itoa(int(k)))
}

// formatDuration spells a duration in its largest whole unit ("720h", not
// "720h0m0s"), so written files read the way people write them.
func formatDuration(d time.Duration) string {
	units := []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}}
	if d == 0 {
		return "0s"
	}
	for _, u := range units {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	return d.String()
}

func encode(t *table, format string) ([]byte, error) {
	switch normalizeFormat(format) {
	case FormatJSON:
		var buf bytes.Buffer
		if err := writeJSON(&buf, t, ""); err != nil {
			return nil, fmt.Errorf("config: write JSON: %w", err)
		}
		buf.WriteByte('\n')
		return buf.Bytes(), nil
	case FormatYAML:
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(yamlNode(t)); err != nil {
			return nil, fmt.Errorf("config: write YAML: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("config: write YAML: %w", err)
		}
		return buf.Bytes(), nil
	case FormatTOML:
		out, err := toml.Marshal(tomlValue(t))
		if err != nil {
			return nil, fmt.Errorf("config: write TOML: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("config: unknown format %q: use json, yaml or toml", format)
}

func writeJSON(buf *bytes.Buffer, val any, indent string) error {
	inner := indent + "  "
	switch x := val.(type) {
	case *table:
		if len(x.keys) == 0 {
			buf.WriteString("{}")
			return nil
		}
		buf.WriteString("{\n")
		for i, k := range x.keys {
			buf.WriteString(inner)
			writeJSONScalar(buf, k)
			buf.WriteString(": ")
			if err := writeJSON(buf, x.vals[i], inner); err != nil {
				return err
			}
			if i < len(x.keys)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "}")
	case []*table:
		if len(x) == 0 {
			buf.WriteString("[]")
			return nil
		}
		buf.WriteString("[\n")
		for i, item := range x {
			buf.WriteString(inner)
			if err := writeJSON(buf, item, inner); err != nil {
				return err
			}
			if i < len(x)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "]")
	case []string:
		buf.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				buf.WriteString(", ")
			}
			if err := writeJSONScalar(buf, item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		return writeJSONScalar(buf, x)
	}
	return nil
}

func writeJSONScalar(buf *bytes.Buffer, val any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(val); err != nil {
		return err
	}
	buf.Write(bytes.TrimRight(b.Bytes(), "\n"))
	return nil
}

func yamlNode(val any) *yaml.Node {
	switch x := val.(type) {
	case *table:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for i, k := range x.keys {
			n.Content = append(n.Content, yamlScalar("!!str", k), yamlNode(x.vals[i]))
		}
		return n
	case []*table:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, item := range x {
			n.Content = append(n.Content, yamlNode(item))
		}
		if len(x) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, s := range x {
			n.Content = append(n.Content, yamlScalar("!!str", s))
		}
		if len(x) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case bool:
		return yamlScalar("!!bool", strconv.FormatBool(x))
	case int64:
		return yamlScalar("!!int", strconv.FormatInt(x, 10))
	default:
		return yamlScalar("!!str", fmt.Sprint(x))
	}
}

func yamlScalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

func tomlValue(val any) any {
	switch x := val.(type) {
	case *table:
		m := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			m[k] = tomlValue(x.vals[i])
		}
		return m
	case []*table:
		list := make([]map[string]any, len(x))
		for i, item := range x {
			list[i] = tomlValue(item).(map[string]any)
		}
		return list
	default:
		return x
	}
}
