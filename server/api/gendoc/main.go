// Command gendoc writes the method list of the server API's reference,
// docs/api.md, from the method table of package api.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gyrehq/gyre/server/api"
)

func main() {
	file := flag.String("o", "docs/api.md", "file to update")
	flag.Parse()
	if err := run(*file); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

func run(file string) error {
	doc, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	out, err := api.WithMethodList(doc)
	if err != nil {
		return err
	}
	return os.WriteFile(file, out, 0o644)
}
