// Package gosnippet turns a Go code block of the docs into a program that
// runs against the test services, for the tests that keep the docs' Go
// snippets compiling and running (queue's, and e2e's in-order run of the
// README).
package gosnippet

import (
	"regexp"
	"strconv"
	"strings"
)

// imports are what a block may use without importing it: the block is the
// body of main, with ctx in scope.
var imports = []string{`"context"`, `"errors"`, `"fmt"`, `"log"`, `"time"`,
	`"github.com/redis/go-redis/v9"`, `"github.com/delaybridge/delaybridge/queue"`}

var importBlock = regexp.MustCompile(`(?s)^import \((.*?)\)\n`)

// Program wraps a block into a program: its own import block joins the
// default imports, the rest is main's body; Redis's address and the "dq"
// prefix become addr and prefix.
func Program(block, prefix, addr string) string {
	all := map[string]bool{}
	for _, imp := range imports {
		all[imp] = true
	}
	block = strings.TrimSpace(block) + "\n"
	if m := importBlock.FindStringSubmatch(block); m != nil {
		for _, l := range strings.Split(m[1], "\n") {
			if l = strings.TrimSpace(l); l != "" {
				all[l] = true
			}
		}
		block = block[len(m[0]):]
	}
	block = strings.ReplaceAll(block, `"127.0.0.1:6379"`, strconv.Quote(addr))
	block = strings.ReplaceAll(block, `"dq"`, strconv.Quote(prefix))
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for imp := range all {
		b.WriteString("\t" + imp + "\n")
	}
	b.WriteString(")\n\n")
	// Every default import in use, whichever the block needs.
	b.WriteString("var _, _, _, _ = errors.Is, fmt.Sprint, log.Fatal, time.Second\n")
	b.WriteString("var _ = redis.NewClient\nvar _ = queue.New\n\n")
	b.WriteString("func main() {\n\tctx := context.Background()\n" + block + "}\n")
	return b.String()
}
