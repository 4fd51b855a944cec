// Command gendoc rewrites the configuration section of README.md (between
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
	readme := flag.String("readme", "README.md", "path of the README to update")
	flag.Parse()
	if err := run(*readme); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	doc, err := config.UpdateREADME(string(old))
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
