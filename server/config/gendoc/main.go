// Command gendoc writes the configuration reference, docs/config.md, from
// the struct tags of package config.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gyrehq/gyre/server/config"
)

func main() {
	out := flag.String("o", "docs/config.md", "file to write")
	flag.Parse()
	if err := os.WriteFile(*out, config.MarkdownReference(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}
