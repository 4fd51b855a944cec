package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

//go:generate go run ./internal/gendoc -doc ../docs/configuration.md

// Markers around the tables of docs/configuration.md that Markdown fills.
const (
	MarkdownBegin = "<!-- config:begin -->"
	MarkdownEnd   = "<!-- config:end -->"
)

// Markdown documents every variable, from the struct tags that Load reads:
// a table of the global variables, then one of the per-topic variables.
func Markdown() string {
	var b strings.Builder
	b.WriteString("\n<!-- Generated from config/env.go by `go generate ./config`; do not edit by hand. -->\n\n")
	b.WriteString("| Variable | Default | Description |\n| --- | --- | --- |\n")
	writeRows(&b, Prefix+"_", reflect.TypeFor[env]())
	fmt.Fprintf(&b, "\nEach topic named in `%s_TOPICS` reads `%s_TOPIC_<NAME>_*`, where `<NAME>` is the topic name\n", Prefix, Prefix)
	b.WriteString("upper-cased with every character other than A-Z and 0-9 replaced by `_` (`order-events` → `ORDER_EVENTS`).\n")
	b.WriteString("Two topics whose names give the same `<NAME>` are an error.\n\n")
	b.WriteString("| Variable | Default | Description |\n| --- | --- | --- |\n")
	writeRows(&b, Prefix+"_TOPIC_<NAME>_", reflect.TypeFor[topicEnv]())
	b.WriteString("\n")
	return b.String()
}

func writeRows(b *strings.Builder, prefix string, t reflect.Type) {
	for f := range t.Fields() {
		def := "—"
		if d := f.Tag.Get("default"); d != "" {
			def = "`" + d + "`"
		}
		desc := f.Tag.Get("desc")
		if f.Tag.Get("secret") == "true" {
			desc += fmt.Sprintf(". Secret: redacted in errors and logs; `%s%s_FILE` may name a file holding it instead", prefix, f.Tag.Get("envconfig"))
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s |\n", prefix, f.Tag.Get("envconfig"), def, strings.ReplaceAll(desc, "|", `\|`))
	}
}

// UpdateDoc returns doc with the text between MarkdownBegin and
// MarkdownEnd replaced by Markdown(); the rest is left as it is.
func UpdateDoc(doc string) (string, error) {
	before, rest, ok := strings.Cut(doc, MarkdownBegin)
	if !ok {
		return "", errors.New("the configuration document has no " + MarkdownBegin + " marker")
	}
	_, after, ok := strings.Cut(rest, MarkdownEnd)
	if !ok {
		return "", errors.New("the configuration document has no " + MarkdownEnd + " marker after " + MarkdownBegin)
	}
	return before + MarkdownBegin + Markdown() + MarkdownEnd + after, nil
}
