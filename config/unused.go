package config

import (
	"reflect"
	"slices"
	"strings"
)

// Unused returns the DELAYBRIDGE_* variables of environ (os.Environ's form)
// that no setting of c reads: a misspelt name, or a topic missing from
// DELAYBRIDGE_TOPICS, would otherwise be ignored without a word. Load does not
// refuse them (a leftover variable should not stop a deploy); the daemon logs
// them as a warning. DELAYBRIDGE_TEST_* are test settings, never reported.
func (c Config) Unused(environ []string) []string {
	known := map[string]bool{}
	for f := range reflect.TypeFor[env]().Fields() {
		name := Prefix + "_" + f.Tag.Get("envconfig")
		known[name] = true
		if f.Tag.Get("secret") == "true" {
			known[name+"_FILE"] = true
		}
	}
	for _, t := range c.Topics {
		for f := range reflect.TypeFor[topicEnv]().Fields() {
			known[Prefix+"_TOPIC_"+t.Var+"_"+f.Tag.Get("envconfig")] = true
		}
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, Prefix+"_") && !strings.HasPrefix(name, Prefix+"_TEST_") && !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
