package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/tracing"
)

// variables is every DELAYBRIDGE_ variable the daemon reads, taken from the
// envconfig tags of the config package's env (global) and topicEnv (per
// topic) structs, so a renamed variable breaks these tests.
type variables struct {
	global   map[string]bool   // REDIS_URL, BATCH_SIZE, ...
	secret   map[string]bool   // those that also accept NAME_FILE
	topic    map[string]bool   // SINK, SLOTS, ... of DELAYBRIDGE_TOPIC_<NAME>_*
	defaults map[string]string // global name -> default value
}

var (
	varsOnce sync.Once
	varsVal  variables
	varsErr  error
)

// knownVariables parses ../config's source: the structs are unexported, and
// reading their tags needs no change to the config package.
func knownVariables(t *testing.T) variables {
	t.Helper()
	varsOnce.Do(func() { varsVal, varsErr = parseConfigVariables(filepath.Join("..", "config")) })
	if varsErr != nil {
		t.Fatalf("read the variables of ../config: %v", varsErr)
	}
	return varsVal
}

func parseConfigVariables(dir string) (variables, error) {
	v := variables{global: map[string]bool{}, secret: map[string]bool{}, topic: map[string]bool{}, defaults: map[string]string{}}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return v, fmt.Errorf("list %s: %w", dir, err)
	}
	found := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return v, fmt.Errorf("parse %s: %w", e.Name(), err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || (ts.Name.Name != "env" && ts.Name.Name != "topicEnv") {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			found[ts.Name.Name] = true
			for _, field := range st.Fields.List {
				if field.Tag == nil {
					continue
				}
				raw, err := strconv.Unquote(field.Tag.Value)
				if err != nil {
					continue
				}
				tag := reflect.StructTag(raw)
				name := tag.Get("envconfig")
				if name == "" {
					continue
				}
				if ts.Name.Name == "topicEnv" {
					v.topic[name] = true
					continue
				}
				v.global[name] = true
				v.defaults[name] = tag.Get("default")
				if tag.Get("secret") == "true" {
					v.secret[name] = true
				}
			}
			return false
		})
	}
	if !found["env"] || !found["topicEnv"] || len(v.global) < 10 || len(v.topic) < 3 {
		return v, fmt.Errorf("structs env and topicEnv with envconfig tags not found in %s (found %v, %d global and %d topic variables)", dir, found, len(v.global), len(v.topic))
	}
	return v, nil
}

// check returns nil if name is a variable the daemon reads, given the topics
// named in DELAYBRIDGE_TOPICS. A per-topic variable of a topic that is not
// listed is an error: the daemon would silently ignore it.
func (v variables) check(name string, topics []string) error {
	rest, ok := strings.CutPrefix(name, config.Prefix+"_")
	if !ok {
		return fmt.Errorf("%s: not a %s_ variable", name, config.Prefix)
	}
	if v.global[rest] {
		return nil
	}
	if base, ok := strings.CutSuffix(rest, "_FILE"); ok && v.secret[base] {
		return nil
	}
	if after, ok := strings.CutPrefix(rest, "TOPIC_"); ok {
		for _, topic := range topics {
			if suffix, ok := strings.CutPrefix(after, config.VarName(topic)+"_"); ok && v.topic[suffix] {
				return nil
			}
		}
		return fmt.Errorf("%s: not a variable of a topic in %s_TOPICS=%s (per-topic variables: %s)", name, config.Prefix, strings.Join(topics, ","), keys(v.topic))
	}
	return fmt.Errorf("%s: the daemon reads no such variable", name)
}

// topicsOf is the topic list a set of variables configures.
func topicsOf(env map[string]string) []string {
	var out []string
	for _, s := range strings.Split(env[config.Prefix+"_TOPICS"], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// checkVariables checks every DELAYBRIDGE_ name in env; other names are
// allowed only when listed in extra.
func checkVariables(t *testing.T, where string, env map[string]string, extra ...string) {
	t.Helper()
	v := knownVariables(t)
	topics := topicsOf(env)
	if err := tracing.Check(func(k string) string { return env[k] }); err != nil {
		t.Errorf("%s: %v", where, err)
	}
	for _, name := range keys(env) {
		if strings.HasPrefix(name, "OTEL_") {
			continue // OpenTelemetry's own (docs/tracing.md), checked above
		}
		if !strings.HasPrefix(name, config.Prefix+"_") {
			if !slices.Contains(extra, name) {
				t.Errorf("%s: variable %s is neither a %s_ variable nor one of %v", where, name, config.Prefix, extra)
			}
			continue
		}
		if err := v.check(name, topics); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
}

// loadConfig runs the daemon's own config.Load on env, with no other
// DELAYBRIDGE_ variable of the test's environment leaking in. files maps the
// value of a _FILE variable to the content the file must hold. It changes the
// process environment: callers must not be parallel tests.
func loadConfig(t *testing.T, env map[string]string, files map[string]string) (config.Config, error) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, config.Prefix+"_") {
			t.Setenv(name, "") // restored after the test
			os.Unsetenv(name)
		}
	}
	dir := t.TempDir()
	for name, value := range env {
		if strings.HasSuffix(name, "_FILE") {
			content, ok := files[value]
			if !ok {
				return config.Config{}, fmt.Errorf("%s=%s: no file of that path is mounted", name, value)
			}
			path := filepath.Join(dir, strings.ToLower(name))
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			value = path
		}
		t.Setenv(name, value)
	}
	return config.Load()
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
