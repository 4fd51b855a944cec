package queue

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/gosnippet"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// snippetDocs are the documents whose ```go blocks TestGoSnippetsInTheDocsRun
// compiles and runs.
var snippetDocs = []string{"../README.md", "../docs/producers.md"}

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
	src := gosnippet.Program(block, prefix, redistest.Options(t).Addr)
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
