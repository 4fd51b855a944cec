package queue

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// snippetDocs are the documents whose ```go blocks TestGoSnippetsInTheDocsRun
// compiles and runs.
var snippetDocs = []string{"../README.md", "../docs/producers.md"}

// snippetImports are what a block may use without importing it: the block
// is the body of main, with ctx in scope.
var snippetImports = []string{`"context"`, `"errors"`, `"fmt"`, `"log"`, `"time"`,
	`"github.com/redis/go-redis/v9"`, `"github.com/delaybridge/delaybridge/queue"`}

// TestGoSnippetsInTheDocsRun: every Go block of the README and the docs
// compiles and runs against the test Redis, under a prefix of its own with
// "orders" registered as an envelope topic, as a user copying it would run
// it with the daemon started. The README's snippet compiled, hid its errors
// and printed "ok: false err: <nil>" after a refused Schedule.
func TestGoSnippetsInTheDocsRun(t *testing.T) {
	var blocks []string
	for _, doc := range snippetDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(b), "```go\n")[1:] {
			blocks = append(blocks, part[:strings.Index(part, "```")])
		}
	}
	if len(blocks) < 2 {
		t.Fatalf("found %d Go blocks in %v, want at least 2", len(blocks), snippetDocs)
	}
	for i, block := range blocks {
		t.Run(strconv.Itoa(i), func(t *testing.T) { runSnippet(t, block) })
	}
}

func runSnippet(t *testing.T, block string) {
	rdb, prefix := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	orders := Layout{Name: "orders", Slots: 8, Format: FormatEnvelope, Sink: "amqp", RoutingKey: "orders"}
	if _, err := New(rdb).Register(ctx, prefix, "docs", []Layout{orders}); err != nil {
		t.Fatal(err)
	}
	src := snippetProgram(block, prefix, redistest.Options(t).Addr)
	// Inside the module, so it builds against this checkout; a directory
	// starting with "_" is skipped by ./... patterns.
	dir, err := os.MkdirTemp(".", "_snippet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	main := filepath.Join(dir, "main.go")
	if err := os.WriteFile(main, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "go", "run", main).CombinedOutput()
	if err != nil {
		t.Fatalf("the block does not run: %v\n%s\nprogram:\n%s", err, out, src)
	}
	t.Logf("output:\n%s", out)
}

var snippetImport = regexp.MustCompile(`(?s)^import \((.*?)\)\n`)

// snippetProgram wraps a block into a program: its own import block joins
// snippetImports, the rest is main's body; Redis's address and the "dq"
// prefix are the test's.
func snippetProgram(block, prefix, addr string) string {
	imports := map[string]bool{}
	for _, imp := range snippetImports {
		imports[imp] = true
	}
	block = strings.TrimSpace(block) + "\n"
	if m := snippetImport.FindStringSubmatch(block); m != nil {
		for _, l := range strings.Split(m[1], "\n") {
			if l = strings.TrimSpace(l); l != "" {
				imports[l] = true
			}
		}
		block = block[len(m[0]):]
	}
	block = strings.ReplaceAll(block, `"127.0.0.1:6379"`, strconv.Quote(addr))
	block = strings.ReplaceAll(block, `"dq"`, strconv.Quote(prefix))
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for imp := range imports {
		b.WriteString("\t" + imp + "\n")
	}
	b.WriteString(")\n\n")
	// Every default import in use, whichever the block needs.
	b.WriteString("var _, _, _, _ = errors.Is, fmt.Sprint, log.Fatal, time.Second\n")
	b.WriteString("var _ = redis.NewClient\nvar _ = queue.New\n\n")
	b.WriteString("func main() {\n\tctx := context.Background()\n" + block + "}\n")
	return b.String()
}
