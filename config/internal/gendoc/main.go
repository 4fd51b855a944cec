// Command gendoc rewrites the tables of docs/configuration.md (between
// <!-- config:begin --> and <!-- config:end -->) from the config package's
// struct tags, leaving the rest of the file untouched.
//
//	go run ./config/internal/gendoc            (from the repository root)
//	go generate ./config
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/delaybridge/delaybridge/config"
)

func main() {
	doc := flag.String("doc", "docs/configuration.md", "path of the configuration document to update")
	flag.Parse()
	if err := run(*doc); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	doc, err := config.UpdateDoc(string(old))
	if err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	if doc == string(old) {
		return nil
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
