package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// Formats of configuration files, as given to LoadBytes and Marshal.
const (
	FormatJSON = "json"
	FormatYAML = "yaml"
	FormatTOML = "toml"
)

// Default returns the configuration with every default applied and nothing
// else: a memory engine, the WebSocket transport and the HTTP API on :8000.
func Default() *Config {
	c := &Config{}
	applyDefaults(reflect.ValueOf(c).Elem())
	return c
}

// applyDefaults sets every key of the struct v that has a default tag.
func applyDefaults(v reflect.Value) {
	for _, f := range fieldsOf(v.Type()) {
		fv := v.FieldByIndex(f.index)
		if f.kind == kindStruct {
			applyDefaults(fv)
			continue
		}
		if !f.hasDef || f.kind == kindUnimplemented {
			continue
		}
		if _, err := setString(fv, f, f.key, f.def); err != nil {
			panic(fmt.Sprintf("config: bad default of %s: %v", f.key, err))
		}
	}
}

// Load reads a configuration file over the defaults; its format follows the
// extension (.json, .yaml, .yml, .toml). It does not validate, so that
// environment and flags may still change the result: call Validate after
// them, or use Resolve. The warnings name unknown and unimplemented keys.
func Load(path string) (*Config, []string, error) {
	c, d, err := load(path)
	return c, d.report(), err
}

// load is Load keeping the decoder's findings apart, for Resolve.
func load(path string) (*Config, *decoder, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &decoder{}, fmt.Errorf("config: read file: %w", err)
	}
	format, err := FormatOf(path)
	if err != nil {
		return nil, &decoder{}, err
	}
	c, d, err := loadBytes(data, format)
	var se *SyntaxError
	if errors.As(err, &se) {
		se.File = path
		return nil, d, se
	}
	if err != nil {
		return nil, d, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, d, nil
}

// FormatOf tells the format of a configuration file by its extension.
func FormatOf(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".json":
		return FormatJSON, nil
	case ".yaml", ".yml":
		return FormatYAML, nil
	case ".toml":
		return FormatTOML, nil
	default:
		return "", fmt.Errorf("config: unsupported file extension %q of %s: use .json, .yaml, .yml or .toml", ext, path)
	}
}

// LoadBytes parses a configuration in the given format (json, yaml or toml)
// over the defaults. Like Load, it does not validate.
func LoadBytes(data []byte, format string) (*Config, []string, error) {
	c, d, err := loadBytes(data, format)
	return c, d.report(), err
}

// loadBytes is LoadBytes keeping the decoder's findings apart; the decoder
// is never nil.
func loadBytes(data []byte, format string) (*Config, *decoder, error) {
	d := &decoder{}
	tree, err := parse(data, format)
	if err != nil {
		return nil, d, err
	}
	c := Default()
	if tree == nil { // an empty file
		return c, d, nil
	}
	d.table("", reflect.ValueOf(c).Elem(), tree)
	if err := d.err(); err != nil {
		return nil, d, err
	}
	return c, d, nil
}

// parse turns a file into tables, lists and scalars.
func parse(data []byte, format string) (any, error) {
	var tree any
	switch normalizeFormat(format) {
	case FormatJSON:
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, nil
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // keep integers exact
		if err := dec.Decode(&tree); err != nil {
			return nil, jsonSyntaxError(data, err)
		}
		if dec.More() {
			off := dec.InputOffset()
			line, col := lineColumn(data, int(off)+len(data[off:])-len(bytes.TrimLeft(data[off:], " \t\r\n")))
			return nil, &SyntaxError{Format: FormatJSON, Line: line, Column: col, Err: errors.New("data after the top-level value")}
		}
	case FormatYAML:
		if err := yaml.Unmarshal(data, &tree); err != nil {
			return nil, yamlSyntaxError(err)
		}
	case FormatTOML:
		if err := toml.Unmarshal(data, &tree); err != nil {
			return nil, tomlSyntaxError(err)
		}
	default:
		return nil, fmt.Errorf("config: unknown format %q: use json, yaml or toml", format)
	}
	if tree == nil {
		return nil, nil
	}
	if _, ok := asTable(tree); !ok {
		return nil, fmt.Errorf("config: the top level must be a table, got %s", describe(tree))
	}
	return tree, nil
}

func normalizeFormat(format string) string {
	switch f := strings.ToLower(strings.TrimPrefix(format, ".")); f {
	case "yml":
		return FormatYAML
	default:
		return f
	}
}
