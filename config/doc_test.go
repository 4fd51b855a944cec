package config

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigDocTableMatchesConfig(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatalf("read docs/configuration.md: %v", err)
	}
	doc := string(b)
	want, err := UpdateDoc(doc)
	if err != nil {
		t.Fatalf("docs/configuration.md: %v", err)
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("docs/configuration.md's tables are out of date: run `go generate ./config` (or `go run ./config/internal/gendoc` from the repository root).\n(-generated +docs/configuration.md):\n%s", diff)
	}
}

func TestMarkdownDocumentsEveryVariable(t *testing.T) {
	md := Markdown()
	for f := range reflect.TypeFor[env]().Fields() {
		row := "| `" + Prefix + "_" + f.Tag.Get("envconfig") + "` |"
		if !strings.Contains(md, row) {
			t.Errorf("no row for %s_%s", Prefix, f.Tag.Get("envconfig"))
		}
		if f.Tag.Get("secret") == "true" && !strings.Contains(md, "`"+Prefix+"_"+f.Tag.Get("envconfig")+"_FILE`") {
			t.Errorf("secret %s_%s does not mention its _FILE variant", Prefix, f.Tag.Get("envconfig"))
		}
	}
	for f := range reflect.TypeFor[topicEnv]().Fields() {
		if !strings.Contains(md, "| `"+Prefix+"_TOPIC_<NAME>_"+f.Tag.Get("envconfig")+"` |") {
			t.Errorf("no row for %s_TOPIC_<NAME>_%s", Prefix, f.Tag.Get("envconfig"))
		}
	}
	if !strings.Contains(md, "| `DELAYBRIDGE_BATCH_SIZE` | `500` |") {
		t.Errorf("defaults are not shown:\n%s", md)
	}
}

func TestUpdateDocTouchesOnlyTheMarkedSection(t *testing.T) {
	in := "# delaybridge\n\nintro\n\n" + MarkdownBegin + "\nstale table\n" + MarkdownEnd + "\n\n## More\nafter\n"
	got, err := UpdateDoc(in)
	if err != nil {
		t.Fatalf("UpdateDoc: %v", err)
	}
	want := "# delaybridge\n\nintro\n\n" + MarkdownBegin + Markdown() + MarkdownEnd + "\n\n## More\nafter\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UpdateDoc mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"no markers", MarkdownBegin + " without end", MarkdownEnd + " before " + MarkdownBegin} {
		if _, err := UpdateDoc(bad); err == nil {
			t.Errorf("UpdateDoc(%q) accepted it", bad)
		}
	}
}
