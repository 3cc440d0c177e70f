package config

import "maps"

// Sources are the layers Resolve reads, lowest precedence first.
type Sources struct {
	// File is the path of a JSON, YAML or TOML file; empty reads none.
	File string
	// EnvPrefixes are the prefixes of environment variables, applied in
	// order so later ones win; empty means EnvPrefixes (CENTRIFUGO, then
	// GYRE). Use []string{"GYRE"} to ignore Centrifugo's variables.
	EnvPrefixes []string
	// Environ holds the environment as "NAME=value" (os.Environ()).
	Environ []string
	// Flags maps key paths to values from the command line, e.g.
	// "http_server.port": "9000".
	Flags map[string]string
	// Base, when set and File is empty, changes the defaults before the
	// environment and flags are applied, so that both can still override
	// what it sets. The server uses it for its development defaults.
	Base func(*Config)
}

// Resolve builds the configuration from defaults, file, environment and
// flags, in that order of precedence, then validates it. The warnings name
// unknown keys and variables, and each key Gyre ignores once, whichever
// layers set it.
func Resolve(s Sources) (*Config, []string, error) {
	c := Default()
	if s.Base != nil && s.File == "" {
		s.Base(c)
	}
	var warnings []string
	if s.File != "" {
		loaded, d, err := load(s.File)
		warnings = append(warnings, d.warnings...)
		if err != nil {
			return nil, warnings, err
		}
		c = loaded
	}
	prefixes := s.EnvPrefixes
	if len(prefixes) == 0 {
		prefixes = EnvPrefixes
	}
	setBy := map[string]string{}
	for _, p := range prefixes {
		a, err := c.applyEnv(p, s.Environ)
		warnings = append(warnings, a.warnings...)
		if err != nil {
			return nil, warnings, err
		}
		maps.Copy(setBy, a.setBy)
	}
	if err := c.SetAll(s.Flags); err != nil {
		return nil, warnings, err
	}
	if err := c.Validate(); err != nil {
		return nil, warnings, err
	}
	// The exporters read the OpenTelemetry environment themselves, and
	// would take a value they do not know for their default: a variable
	// set wrong is refused here, where checkconfig sees it too.
	if c.OpenTelemetry.Enabled {
		if _, err := c.OpenTelemetry.ReadOTelEnv(EnvironLookup(s.Environ)); err != nil {
			return nil, warnings, err
		}
	}
	// Each layer kept the unimplemented keys it read: the final values
	// tell which are in effect, once each.
	for _, k := range c.Unsupported() {
		warnings = append(warnings, unsupportedWarning(k.Path, k.Instead, setterOf(setBy, k.Path)))
	}
	warnings = append(warnings, c.Notices()...)
	return c, warnings, nil
}
