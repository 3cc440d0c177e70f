package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

// SyntaxError is a config file that does not parse, with the place of the
// fault when the parser tells it. Its message starts like a compiler's,
// "config.json:12:5: ...", so that editors and terminals can jump there.
type SyntaxError struct {
	// File is the file's path; empty for bytes that came from no file.
	File string
	// Format is json, yaml or toml.
	Format string
	// Line and Column count from 1; 0 when unknown (YAML gives no
	// column).
	Line, Column int
	// Err is the parser's own error.
	Err error
}

func (e *SyntaxError) Error() string {
	what := "parse " + formatName(e.Format) + ": " + e.Err.Error()
	where := e.File
	if where == "" {
		where = "config"
	}
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", where, e.Line, e.Column, what)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", where, e.Line, what)
	default:
		return where + ": " + what
	}
}

func (e *SyntaxError) Unwrap() error { return e.Err }

func formatName(format string) string {
	switch format {
	case FormatJSON:
		return "JSON"
	case FormatYAML:
		return "YAML"
	case FormatTOML:
		return "TOML"
	}
	return format
}

// jsonSyntaxError places a JSON decoding error: encoding/json gives the
// byte offset just past the fault, and a truncated file ends at the end.
func jsonSyntaxError(data []byte, err error) *SyntaxError {
	offset := -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = int(se.Offset) - 1
	case errors.As(err, &te):
		offset = int(te.Offset) - 1
	case errors.Is(err, io.ErrUnexpectedEOF):
		offset = len(data)
	}
	e := &SyntaxError{Format: FormatJSON, Err: err}
	if offset >= 0 {
		e.Line, e.Column = lineColumn(data, offset)
	}
	return e
}

// lineColumn turns a byte offset into a 1-based line and column, the
// column counted in bytes as compilers do.
func lineColumn(data []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(data))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = offset - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// yamlLine is how go-yaml reports a place in its messages; it has no
// structured position for syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func yamlSyntaxError(err error) *SyntaxError {
	e := &SyntaxError{Format: FormatYAML, Err: err}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Err = errors.New(err.Error()[len(m[0]):])
	}
	return e
}

func tomlSyntaxError(err error) *SyntaxError {
	e := &SyntaxError{Format: FormatTOML, Err: err}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		e.Line, e.Column = de.Position()
	}
	return e
}
