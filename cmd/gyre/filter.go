package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gyrehq/gyre/filter"
)

// filterCmd compiles a filter expression into the JSON tree clients send
// as the tf of a subscribe (for client code), or, with -format, prints a
// JSON tree back as an expression.
func filterCmd(args []string, stdout io.Writer) error {
	fs := newFlagSet("filter")
	format := fs.Bool("format", false, "read a JSON tree and print it as an expression")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("filter: give one expression, e.g. gyre filter 'ticker in (\"GOOG\", \"AAPL\")'")
	}
	in := fs.Arg(0)
	if *format {
		tree, err := filter.ParseTreeJSON([]byte(in))
		if err != nil {
			return err
		}
		if _, err := filter.Compile(tree, filter.Unlimited); err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, filter.Format(tree))
		return err
	}
	tree, err := filter.Parse(in)
	if err != nil {
		var se *filter.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%w\n  %s\n  %s^", err, in, strings.Repeat(" ", runeCount(in[:min(se.Pos, len(in))])))
		}
		return err
	}
	if _, err := filter.Compile(tree, filter.Limits{}); err != nil {
		return err
	}
	out, err := filter.TreeJSON(tree)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}

func runeCount(s string) int { return len([]rune(s)) }
