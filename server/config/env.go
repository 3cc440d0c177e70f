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
// warnings (but for those Kubernetes sets, see kubernetesService), and so
// do unimplemented keys set in effect; values that do not parse are errors
// naming the variable.
func (c *Config) ApplyEnv(prefix string, environ []string) ([]string, error) {
	a, err := c.applyEnv(prefix, environ)
	return a.report(), err
}

// applyEnv is ApplyEnv keeping apart what it found, for Resolve.
func (c *Config) applyEnv(prefix string, environ []string) (*envApplier, error) {
	p := envPrefix(prefix)
	a := &envApplier{c: c, vars: map[string]string{}, used: map[string]bool{}, setBy: map[string]string{}}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(name, p) {
			a.vars[name] = value
		}
	}
	if len(a.vars) == 0 {
		return a, nil
	}
	// The namespace list first: its members' variables depend on it.
	a.apply(EnvName(p, "channel.namespaces"), "channel.namespaces")
	index := envIndex(p)
	for _, name := range sortedKeys(a.vars) {
		path, ok := index[name]
		if !ok || a.used[name] {
			continue
		}
		if service, ok := kubernetesOverKey(name, a.vars[name], a.vars); ok {
			a.used[name] = true
			a.warnings = append(a.warnings, fmt.Sprintf("config: %s=%s is the variable Kubernetes sets for the Service %q, not a value of %s: ignored (rename the Service, or set enableServiceLinks: false in the pod spec)", name, a.vars[name], service, path))
			continue
		}
		a.apply(name, path)
	}
	a.applyNamespaces(p)
	a.warnUnknown(p)
	return a, errors.Join(a.errs...)
}

type envApplier struct {
	c    *Config
	vars map[string]string
	used map[string]bool
	// setBy maps each key path set to the variable that set it.
	setBy map[string]string
	// warnings name unknown variables.
	warnings []string
	// unimplemented are the Unimplemented keys set in effect.
	unimplemented []UnsupportedKey
	errs          []error
}

// report is every warning of a: unknown variables, then unimplemented
// keys.
func (a *envApplier) report() []string {
	out := slices.Clone(a.warnings)
	for _, k := range a.unimplemented {
		out = append(out, unsupportedWarning(k.Path, k.Instead, setterOf(a.setBy, k.Path)))
	}
	return out
}

// setterOf names the variable of setBy that set path, or the table or
// list holding it ("" when none did).
func setterOf(setBy map[string]string, path string) string {
	name, longest := "", -1
	for p, n := range setBy {
		within := path == p || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[")
		if within && len(p) > longest {
			name, longest = n, len(p)
		}
	}
	return name
}

// apply sets path from the variable name when it is present.
func (a *envApplier) apply(name, path string) {
	value, ok := a.vars[name]
	if !ok {
		return
	}
	a.used[name] = true
	a.setBy[path] = name
	unimplemented, err := a.c.set(path, value)
	a.unimplemented = append(a.unimplemented, unimplemented...)
	var ke *KeyError
	switch {
	case errors.Is(err, ErrNotImplemented):
		a.keepUnimplemented(path, value)
	case errors.As(err, &ke):
		a.errs = append(a.errs, fmt.Errorf("%w (from %s)", err, name))
	case err != nil:
		a.errs = append(a.errs, keyErr(path, fmt.Errorf("%w (from %s)", err, name)))
	}
}

// keepUnimplemented stores the value of an Unimplemented key, as a file's
// is, so that Unsupported sees it.
func (a *envApplier) keepUnimplemented(path, value string) {
	v, f, canon, err := resolve(reflect.ValueOf(a.c).Elem(), path)
	if err != nil {
		return
	}
	var raw any
	if json.Unmarshal([]byte(value), &raw) != nil {
		raw = value
	}
	v.Set(reflect.ValueOf(Unimplemented{value: raw}))
	if inEffect(f, raw) {
		a.unimplemented = append(a.unimplemented, UnsupportedKey{Path: canon, Instead: f.instead})
	}
}

// warnUnknown warns about each variable no key took, with the closest
// known name when it looks like a typo of one, but for those Kubernetes
// sets for a Service (see kubernetesService): they are not configuration.
func (a *envApplier) warnUnknown(prefix string) {
	var known []string
	for _, name := range sortedKeys(a.vars) {
		if a.used[name] {
			continue
		}
		if _, ok := kubernetesService(name, a.vars); ok {
			continue
		}
		if known == nil {
			known = slices.Sorted(slices.Values(a.c.knownEnvNames(prefix)))
		}
		// Variable names are long: a fifth of the name, at least 2 edits.
		a.warnings = append(a.warnings, unknownEnvWarning(name, closest(name, known, max(2, len(name)/5))))
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

// unknownEnvWarning names a variable no key matches and the known name it
// may be a typo of, if any.
func unknownEnvWarning(name, suggestion string) string {
	msg := fmt.Sprintf("config: unknown environment variable %s ignored", name)
	if suggestion != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", suggestion)
	}
	return msg
}

// kubernetesShape matches what follows a Service's part in the names of the
// variables Kubernetes sets in a pod for each Service of its namespace. The
// Service's part is its name upper-cased with '-' as '_': for a Service
// "gyre-api", GYRE_API_SERVICE_HOST, GYRE_API_SERVICE_PORT,
// GYRE_API_SERVICE_PORT_<PORT NAME>, GYRE_API_PORT=tcp://10.0.0.1:8000 and
// GYRE_API_PORT_8000_TCP (with _PROTO, _PORT and _ADDR).
var kubernetesShape = regexp.MustCompile(`^(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)?)$`)

// kubernetesService returns the Service part of name when name is one of
// the variables Kubernetes sets for a Service: it has one of their shapes,
// and vars holds the Service's <PART>_SERVICE_HOST, which Kubernetes sets
// for every Service it sets any of them for. The shape alone is not
// enough: GYRE_HTTP_SERVR_PORT=9000 has it, and is a misspelt key.
func kubernetesService(name string, vars map[string]string) (string, bool) {
	for i := range len(name) {
		if name[i] != '_' || !kubernetesShape.MatchString(name[i+1:]) {
			continue
		}
		if _, ok := vars[name[:i]+"_SERVICE_HOST"]; ok {
			return name[:i], true
		}
	}
	return "", false
}

// serviceURL matches the value Kubernetes gives <PART>_PORT:
// tcp://10.0.0.1:8000, as no port key takes.
var serviceURL = regexp.MustCompile(`^(tcp|udp|sctp)://`)

// kubernetesOverKey tells a variable whose name is a key's but which
// Kubernetes set for a Service: a Service "gyre-grpc-api" gives
// GYRE_GRPC_API_PORT=tcp://10.0.0.1:10000, the name of grpc_api.port.
func kubernetesOverKey(name, value string, vars map[string]string) (service string, ok bool) {
	part, ok := kubernetesService(name, vars)
	if !ok || !serviceURL.MatchString(value) {
		return "", false
	}
	return strings.ToLower(strings.ReplaceAll(part, "_", "-")), true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
