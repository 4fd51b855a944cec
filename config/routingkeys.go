package config

import (
	"fmt"
	"path"
	"strings"
)

// routingKeysVar is the suffix of DELAYBRIDGE_TOPIC_<NAME>_ROUTING_KEYS.
const routingKeysVar = "_ROUTING_KEYS"

// routingKeys reads DELAYBRIDGE_TOPIC_<NAME>_ROUTING_KEYS of every topic set
// in environ, listed in DELAYBRIDGE_TOPICS or not: the HTTP API serves every
// topic registered in Redis, and `delaybridge api` runs without
// DELAYBRIDGE_TOPICS. The result is keyed by the topic's variable name
// (VarName); a malformed pattern fails naming its variable.
func (p *parser) routingKeys(environ []string) map[string][]string {
	var out map[string][]string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		v, ok := strings.CutPrefix(name, Prefix+"_TOPIC_")
		if !ok {
			continue
		}
		if v, ok = strings.CutSuffix(v, routingKeysVar); !ok || v == "" {
			continue
		}
		if pats := p.patterns("TOPIC_"+v+routingKeysVar, value); len(pats) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[v] = pats
		}
	}
	return out
}

// patterns parses a comma list of path.Match patterns; an empty list is
// none.
func (p *parser) patterns(name, s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			p.fail(name, s, "has an empty pattern: a comma list of path.Match patterns such as orders.*,audit")
			return nil
		}
		if _, err := path.Match(part, ""); err != nil {
			p.fail(name, s, fmt.Sprintf("pattern %q is malformed (%v): a comma list of path.Match patterns such as orders.*,audit ('*' alone: every key)", part, err))
			return nil
		}
		out = append(out, part)
	}
	return out
}

// RoutingKeysOf are the patterns of topic's ROUTING_KEYS (none when unset).
func (a API) RoutingKeysOf(topic string) []string { return a.RoutingKeys[VarName(topic)] }

// routingKeysValues are the ROUTING_KEYS variables that are set.
func (a API) routingKeysValues() map[string]string {
	m := map[string]string{}
	for v := range a.RoutingKeys {
		m["TOPIC_"+v+routingKeysVar] = strings.Join(a.RoutingKeys[v], ",")
	}
	return m
}
