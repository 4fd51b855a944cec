package config

import (
	"fmt"
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

// patterns parses a comma list of AMQP topic patterns ("*" one
// dot-separated word, "#" zero or more; see docs/api.md); an empty list is
// none. A word that holds '*' or '#' beside other characters, or a glob
// character ('?', '[', '\\') is refused: it would be taken literally, and
// is most likely a pattern written for the path.Match rules of before.
func (p *parser) patterns(name, s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	const help = "a comma list of AMQP topic patterns such as orders.*,orders.#,audit ('*' one dot-separated word, '#' zero or more; '#' alone: every key)"
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			p.fail(name, s, "has an empty pattern: "+help)
			return nil
		}
		if err := checkTopicPattern(part); err != nil {
			p.fail(name, s, fmt.Sprintf("pattern %q %v: %s", part, err, help))
			return nil
		}
		out = append(out, part)
	}
	return out
}

func checkTopicPattern(pattern string) error {
	if strings.ContainsAny(pattern, "?[\\") {
		return fmt.Errorf("holds a glob character (?, [ or \\), which AMQP topic patterns do not have")
	}
	for _, w := range strings.Split(pattern, ".") {
		if w != "*" && w != "#" && strings.ContainsAny(w, "*#") {
			return fmt.Errorf("has the word %q: '*' and '#' must be whole words", w)
		}
	}
	return nil
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
