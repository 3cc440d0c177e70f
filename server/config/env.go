package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// DefaultEnvPrefix is the prefix of Gyre's environment variables.
const DefaultEnvPrefix = "GYRE"

// CentrifugoEnvPrefix is the prefix of Centrifugo's environment variables,
// read too so that a container configured for Centrifugo keeps its settings.
const CentrifugoEnvPrefix = "CENTRIFUGO"

// EnvPrefixes are the prefixes Resolve reads by default, lowest precedence
// first: a GYRE_ variable wins over the CENTRIFUGO_ one for the same key.
var EnvPrefixes = []string{CentrifugoEnvPrefix, DefaultEnvPrefix}

// EnvName is the environment variable of a key path with the given prefix:
// EnvName("GYRE", "client.token.hmac_secret_key") is
// GYRE_CLIENT_TOKEN_HMAC_SECRET_KEY.
func EnvName(prefix, path string) string {
	return envPrefix(prefix) + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

func envPrefix(prefix string) string {
	if prefix == "" {
		prefix = DefaultEnvPrefix
	}
	return strings.TrimSuffix(strings.ToUpper(prefix), "_") + "_"
}

// namespaceEnvName is how a namespace name appears inside an environment
// variable: upper-cased, with '.' and '-' turned into '_'.
func namespaceEnvName(name string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(name))
}

// ApplyEnv sets keys from environment variables (as from os.Environ) that
// start with prefix (GYRE when empty): the prefix, '_', and the key path
// upper-cased with dots as '_', e.g. GYRE_HTTP_SERVER_PORT=9000. Lists take
// a JSON array or items separated by commas or spaces. Namespaces are set
// with PREFIX_CHANNEL_NAMESPACES (a JSON array, or names only) and their
// options with PREFIX_CHANNEL_NAMESPACES_<NAME>_<OPTION>, where NAME is the
// namespace name upper-cased with '.' and '-' as '_'.
//
// Calling it with prefix CENTRIFUGO and then GYRE lets Centrifugo's variables
// work while Gyre's win. Unknown variables with the prefix come back as
// warnings; values that do not parse are errors naming the variable.
func (c *Config) ApplyEnv(prefix string, environ []string) ([]string, error) {
	p := envPrefix(prefix)
	vars := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(name, p) {
			vars[name] = value
		}
	}
	if len(vars) == 0 {
		return nil, nil
	}
	a := &envApplier{c: c, vars: vars, used: map[string]bool{}}
	// The namespace list first: its members' variables depend on it.
	a.apply(EnvName(p, "channel.namespaces"), "channel.namespaces")
	index := envIndex(p)
	for _, name := range sortedKeys(vars) {
		if path, ok := index[name]; ok && !a.used[name] {
			a.apply(name, path)
		}
	}
	a.applyNamespaces(p)
	for _, name := range sortedKeys(vars) {
		if !a.used[name] && !isPlatformEnv(p, name) {
			a.warnings = append(a.warnings, unknownEnvWarning(name, a.c.knownEnvNames(p)))
		}
	}
	return a.warnings, errors.Join(a.errs...)
}

type envApplier struct {
	c        *Config
	vars     map[string]string
	used     map[string]bool
	warnings []string
	errs     []error
}

// apply sets path from the variable name when it is present.
func (a *envApplier) apply(name, path string) {
	value, ok := a.vars[name]
	if !ok {
		return
	}
	a.used[name] = true
	warnings, err := a.c.set(path, value)
	a.warnings = append(a.warnings, warnings...)
	var ke *KeyError
	switch {
	case errors.Is(err, ErrNotImplemented):
		w := fmt.Sprintf("config: %s sets %q, which is not implemented by Gyre and is ignored", name, path)
		if v, f, _, rerr := resolve(reflect.ValueOf(a.c).Elem(), path); rerr == nil {
			if f.instead != "" {
				w += ": " + f.instead
			}
			// Kept, as a file's value is, so that Unsupported sees it.
			var raw any
			if json.Unmarshal([]byte(value), &raw) != nil {
				raw = value
			}
			v.Set(reflect.ValueOf(Unimplemented{value: raw}))
		}
		a.warnings = append(a.warnings, w)
	case errors.As(err, &ke):
		a.errs = append(a.errs, fmt.Errorf("%w (from %s)", err, name))
	case err != nil:
		a.errs = append(a.errs, keyErr(path, fmt.Errorf("%w (from %s)", err, name)))
	}
}

// applyNamespaces sets the options of each namespace from its variables.
func (a *envApplier) applyNamespaces(prefix string) {
	optionType := reflect.TypeFor[Namespace]()
	for i, ns := range a.c.Channel.Namespaces {
		nsPrefix := prefix + "CHANNEL_NAMESPACES_" + namespaceEnvName(ns.Name) + "_"
		walkLeaves(optionType, "", func(key string, _ field) {
			if key == "name" {
				return
			}
			name := nsPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
			a.apply(name, fmt.Sprintf("channel.namespaces[%d].%s", i, key))
		})
	}
}

// envIndex maps every variable name to its key path.
func envIndex(prefix string) map[string]string {
	index := map[string]string{}
	walkLeaves(reflect.TypeFor[Config](), "", func(path string, _ field) {
		index[EnvName(prefix, path)] = path
	})
	return index
}

// knownEnvNames lists every variable name the configuration c understands
// with the prefix p, namespace options included.
func (c *Config) knownEnvNames(p string) []string {
	names := make([]string, 0, 256)
	for name := range envIndex(p) {
		names = append(names, name)
	}
	optionType := reflect.TypeFor[Namespace]()
	for _, ns := range c.Channel.Namespaces {
		nsPrefix := p + "CHANNEL_NAMESPACES_" + namespaceEnvName(ns.Name) + "_"
		walkLeaves(optionType, "", func(key string, _ field) {
			if key != "name" {
				names = append(names, nsPrefix+strings.ToUpper(strings.ReplaceAll(key, ".", "_")))
			}
		})
	}
	return names
}

// unknownEnvWarning names a variable no key matches and, when one known
// name is close enough to be a typo of it, suggests that name.
func unknownEnvWarning(name string, known []string) string {
	msg := fmt.Sprintf("config: unknown environment variable %s ignored", name)
	// Variable names are long: a fifth of the name, at least 2 edits.
	if s := closest(name, slices.Sorted(slices.Values(known)), max(2, len(name)/5)); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return msg
}

// platformEnv matches variables that Kubernetes injects for a Service whose
// name equals the prefix (GYRE_PORT, GYRE_SERVICE_HOST ...): they are not
// configuration, so they give no warning.
var platformEnv = regexp.MustCompile(`(^|_)(PORT|PORT_\d+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?|SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?)$`)

func isPlatformEnv(prefix, name string) bool {
	return platformEnv.MatchString(strings.TrimPrefix(name, prefix))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
