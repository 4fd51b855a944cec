package config

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestREADMEConfigTableMatchesConfig(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	readme := string(b)
	want, err := UpdateREADME(readme)
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	if diff := cmp.Diff(want, readme); diff != "" {
		t.Errorf("README.md's configuration section is out of date: run `go generate ./config` (or `go run ./config/internal/gendoc` from the repository root).\n(-generated +README):\n%s", diff)
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

func TestUpdateREADMETouchesOnlyTheMarkedSection(t *testing.T) {
	in := "# delaybridge\n\nintro\n\n" + MarkdownBegin + "\nstale table\n" + MarkdownEnd + "\n\n## More\nafter\n"
	got, err := UpdateREADME(in)
	if err != nil {
		t.Fatalf("UpdateREADME: %v", err)
	}
	want := "# delaybridge\n\nintro\n\n" + MarkdownBegin + Markdown() + MarkdownEnd + "\n\n## More\nafter\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UpdateREADME mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"no markers", MarkdownBegin + " without end", MarkdownEnd + " before " + MarkdownBegin} {
		if _, err := UpdateREADME(bad); err == nil {
			t.Errorf("UpdateREADME(%q) accepted it", bad)
		}
	}
}
