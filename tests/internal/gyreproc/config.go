package gyreproc

import "strings"

// Config is a gyre configuration file as nested maps, written as JSON.
type Config map[string]any

// Set puts v at a dotted key path ("client.token.hmac_secret_key"),
// creating the maps on the way, and returns c for chaining.
func (c Config) Set(path string, v any) Config {
	keys := strings.Split(path, ".")
	m := map[string]any(c)
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
	return c
}

// get returns the value at a dotted key path, or nil.
func (c Config) get(path string) any {
	var v any = map[string]any(c)
	for k := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
