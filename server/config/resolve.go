package config

// Sources are the layers Resolve reads, lowest precedence first.
type Sources struct {
	// File is the path of a JSON, YAML or TOML file; empty reads none.
	File string
	// EnvPrefixes are the prefixes of environment variables, applied in
	// order so later ones win; empty means just GYRE. Use
	// []string{"CENTRIFUGO", "GYRE"} to honour Centrifugo's variables too.
	EnvPrefixes []string
	// Environ holds the environment as "NAME=value" (os.Environ()).
	Environ []string
	// Flags maps key paths to values from the command line, e.g.
	// "http_server.port": "9000".
	Flags map[string]string
}

// Resolve builds the configuration from defaults, file, environment and
// flags, in that order of precedence, then validates it. The warnings name
// unknown and unimplemented keys and variables.
func Resolve(s Sources) (*Config, []string, error) {
	c := Default()
	var warnings []string
	if s.File != "" {
		loaded, w, err := Load(s.File)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, err
		}
		c = loaded
	}
	prefixes := s.EnvPrefixes
	if len(prefixes) == 0 {
		prefixes = []string{DefaultEnvPrefix}
	}
	for _, p := range prefixes {
		w, err := c.ApplyEnv(p, s.Environ)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, err
		}
	}
	if err := c.SetAll(s.Flags); err != nil {
		return nil, warnings, err
	}
	if err := c.Validate(); err != nil {
		return nil, warnings, err
	}
	warnings = append(warnings, c.Notices()...)
	return c, warnings, nil
}
