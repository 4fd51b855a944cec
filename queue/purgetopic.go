package queue

import (
	"context"
	"fmt"
	"regexp"

	"github.com/redis/go-redis/v9"
)

// purgeTopicPage is how many keys one SCAN call asks for, and how many
// UNLINKs one pipeline sends.
const purgeTopicPage = 500

// TopicKeys lists every key that holds data of t, found by SCAN (so slots
// beyond the topic's count, left by a resize, are found too): each slot's
// keys (<prefix>:{<topic>:<slot>} and <prefix>:{<topic>:<slot>}:…) and the
// topic-wide ones (<prefix>:{<topic>}:…), or for an adopted key K, K and
// {K}:…. Another topic's keys never match: a topic name has no ':' and no
// brace, so "{orders:" is followed only by orders' slot numbers. The
// registry entry (<prefix>:topics) is not the topic's data.
func (q *Queue) TopicKeys(ctx context.Context, t Topic) ([]string, error) {
	var patterns []string
	var keep *regexp.Regexp
	if t.Key != "" {
		base := t.Key // as Keys names an adopted key's other keys
		if !hasHashTag(base) {
			base = "{" + base + "}"
		}
		patterns = []string{globEscape(t.Key), globEscape(base) + ":*"}
	} else {
		p := t.KeyPrefix() + ":{" + t.Name
		patterns = []string{globEscape(p) + ":*", globEscape(p) + "}:*"}
		keep = regexp.MustCompile(`^` + regexp.QuoteMeta(p) + `(:[0-9]+\}|\}:)`)
	}
	seen := map[string]bool{}
	var out []string
	scan := func(ctx context.Context, c *redis.Client) error {
		for _, pat := range patterns {
			iter := c.Scan(ctx, 0, pat, purgeTopicPage).Iterator()
			for iter.Next(ctx) {
				k := iter.Val()
				if !seen[k] && (keep == nil || keep.MatchString(k)) {
					seen[k] = true
					out = append(out, k)
				}
			}
			if err := iter.Err(); err != nil {
				return fmt.Errorf("scan %s: %w", pat, err)
			}
		}
		return nil
	}
	var err error
	switch c := q.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		err = fmt.Errorf("list the keys of topic %s: a %T cannot be scanned", t.Name, q.rdb)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PurgeTopic deletes every key of TopicKeys(t): its scheduled, in-flight,
// retrying and dead messages, their records, the id index, the delivered
// (dedup) set, recurrences, pause and flow-control state. It returns how
// many keys it deleted. The caller makes sure no replica forwards t: a
// scanner holding a claim would publish it all the same, and one writing a
// recurrence's next tick would write it again.
func (q *Queue) PurgeTopic(ctx context.Context, t Topic) (int, error) {
	keys, err := q.TopicKeys(ctx, t)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for len(keys) > 0 {
		page := keys[:min(len(keys), purgeTopicPage)]
		keys = keys[len(page):]
		pipe := q.rdb.Pipeline()
		cmds := make([]*redis.IntCmd, len(page))
		for i, k := range page {
			cmds[i] = pipe.Unlink(ctx, k) // one key each: a Cluster routes each by its slot
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return deleted, fmt.Errorf("delete the keys of topic %s: %w", t.Name, err)
		}
		for _, c := range cmds {
			deleted += int(c.Val())
		}
	}
	return deleted, nil
}
