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
	known := c.known()
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

// Suggest is the variable of c that an unused name most likely meant (at
// most two letters added, dropped, changed or swapped), or "".
func (c Config) Suggest(name string) string {
	best, bestD := "", 3
	for k := range c.known() {
		if d := distance(name, k); d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b: edits of
// one byte, and swaps of two neighbours (ORDRES for ORDERS is one).
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// known is every variable c reads.
func (c Config) known() map[string]bool {
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
	c.MessageSize.known(known)
	for v := range c.API.RoutingKeys {
		// Read for topics not listed too: the API serves every registered one.
		known[Prefix+"_TOPIC_"+v+routingKeysVar] = true
	}
	return known
}

// Misspelt is, for a configuration that could not be loaded, a line for
// each DELAYBRIDGE_* variable of environ that no global setting reads and
// that is within two edits of one that does ("DELAYBRIDGE_REDIS_ULR: did you
// mean DELAYBRIDGE_REDIS_URL?"): a misspelt name is often why a required
// variable is missing. Topic variables are left out: which topics exist is
// part of what failed to load.
func Misspelt(environ []string) []string {
	var c Config
	var out []string
	for _, name := range c.Unused(environ) {
		if strings.HasPrefix(name, Prefix+"_TOPIC_") {
			continue
		}
		if s := c.Suggest(name); s != "" {
			out = append(out, name+" is not a variable: did you mean "+s+"?")
		}
	}
	return out
}
