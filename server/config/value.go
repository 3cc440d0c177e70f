package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// describe names a raw value in an error message.
func describe(raw any) string {
	switch x := raw.(type) {
	case string:
		return strconv.Quote(x)
	case map[string]any, map[any]any:
		return "a table"
	case []any:
		return "a list"
	case nil:
		return "null"
	default:
		return fmt.Sprint(x)
	}
}

// toInt reads an integer from a file value or a string.
func toInt(raw any) (int64, error) {
	switch x := raw.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("integer %d out of range", x)
		}
		return int64(x), nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("expected an integer, got %v", x)
		}
		return int64(x), nil
	case json.Number:
		return toInt(string(x))
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			if f, ferr := strconv.ParseFloat(strings.TrimSpace(x), 64); ferr == nil {
				return toInt(f)
			}
			return 0, fmt.Errorf("invalid integer %q", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("expected an integer, got %s", describe(raw))
}

// toBool reads a boolean; strings follow strconv.ParseBool as Centrifugo does.
func toBool(raw any) (bool, error) {
	switch x := raw.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		if err != nil {
			return false, fmt.Errorf("invalid boolean %q", x)
		}
		return b, nil
	case int, int64, uint64, float64, json.Number:
		n, err := toInt(x)
		if err != nil || (n != 0 && n != 1) {
			return false, fmt.Errorf("invalid boolean %s", describe(raw))
		}
		return n == 1, nil
	}
	return false, fmt.Errorf("expected a boolean, got %s", describe(raw))
}

// toString reads a string; scalars of other types are spelled out, so that
// an unquoted YAML secret such as 12345 still loads.
func toString(raw any) (string, error) {
	switch x := raw.(type) {
	case string:
		return x, nil
	case bool, int, int64, uint64, json.Number:
		return fmt.Sprint(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("expected a string, got %s", describe(raw))
}

// toDuration reads a duration. Centrifugo v6 takes durations only as Go
// duration strings ("25s", "1m30s"); a bare number there is nanoseconds,
// which no one means, so any number but 0 is refused with a hint.
func toDuration(raw any) (time.Duration, error) {
	if s, ok := raw.(string); ok {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return d, nil
	}
	n, err := toInt(raw)
	if err != nil {
		return 0, fmt.Errorf("expected a duration string such as \"25s\", got %s", describe(raw))
	}
	if n != 0 {
		return 0, fmt.Errorf("invalid duration %d: give a string with a unit, such as \"%ds\"", n, n)
	}
	return 0, nil
}

// toStrings reads a list of strings. A single scalar is a list of one, as
// engine.redis.address: "host:6379" is in Centrifugo.
// toStringMap reads a table of strings from a file value, or from a JSON
// object in a string (an environment variable or a flag). An empty table
// is nil, as a missing one is.
func toStringMap(raw any) (map[string]string, error) {
	m, err := readStringMap(raw)
	if len(m) == 0 {
		m = nil
	}
	return m, err
}

func readStringMap(raw any) (map[string]string, error) {
	switch x := raw.(type) {
	case string:
		var m map[string]string
		if err := json.Unmarshal([]byte(x), &m); err != nil {
			return nil, fmt.Errorf("expected a JSON object of strings, got %s", describe(raw))
		}
		return m, nil
	case map[any]any:
		out := make(map[string]string, len(x))
		for k, v := range x {
			ks, err := toString(k)
			if err != nil {
				return nil, fmt.Errorf("key %v: %w", k, err)
			}
			if out[ks], err = toString(v); err != nil {
				return nil, fmt.Errorf("key %q: %w", ks, err)
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]string, len(x))
		for k, v := range x {
			s, err := toString(v)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			out[k] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected a table of strings, got %s", describe(raw))
}

func toStrings(raw any) ([]string, error) {
	list, ok := raw.([]any)
	if !ok {
		s, err := toString(raw)
		if err != nil {
			return nil, fmt.Errorf("expected a list of strings, got %s", describe(raw))
		}
		return []string{s}, nil
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, err := toString(item)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// splitList reads a list given as one string, from the environment or the
// command line: a JSON array, or items separated by commas or white space.
func splitList(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var out []string
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("invalid JSON list %q: %w", s, err)
		}
		return out, nil
	}
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	}), nil
}

// setScalar stores a raw value into a leaf that is not a table or a list of
// tables.
func setScalar(v reflect.Value, k kind, raw any) error {
	switch k {
	case kindString:
		s, err := toString(raw)
		if err != nil {
			return err
		}
		v.SetString(s)
	case kindBool:
		b, err := toBool(raw)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case kindInt:
		n, err := toInt(raw)
		if err != nil {
			return err
		}
		if v.OverflowInt(n) {
			return fmt.Errorf("integer %d out of range", n)
		}
		v.SetInt(n)
	case kindDuration:
		d, err := toDuration(raw)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
	case kindStrings:
		list, err := toStrings(raw)
		if err != nil {
			return err
		}
		setList(v, list)
	case kindStringMap:
		m, err := toStringMap(raw)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(m))
	case kindUnimplemented:
		v.Set(reflect.ValueOf(Unimplemented{value: raw}))
	default:
		return errors.New("not a single value")
	}
	return nil
}

// meaningful reports whether a raw value says anything: null, false, zero,
// "" and tables or lists of only such values say nothing.
func meaningful(raw any) bool {
	switch x := raw.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case map[string]any:
		for _, v := range x {
			if meaningful(v) {
				return true
			}
		}
		return false
	case map[any]any:
		for _, v := range x {
			if meaningful(v) {
				return true
			}
		}
		return false
	case []any:
		for _, v := range x {
			if meaningful(v) {
				return true
			}
		}
		return false
	}
	if n, err := toInt(raw); err == nil {
		return n != 0
	}
	return true
}

// setList stores a list of strings, an empty one as nil so that a written and
// re-read configuration compares equal to the original.
func setList(v reflect.Value, list []string) {
	if len(list) == 0 {
		v.SetZero()
		return
	}
	v.Set(reflect.ValueOf(list))
}
