package queue

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrRedisFull is wrapped by the errors of writes that Redis refused because
// it reached its maxmemory (OOM under the noeviction policy): scheduling,
// rescheduling, registering a topic. The messages already queued still
// drain (see allowOOMLua), and draining is what makes room again.
var ErrRedisFull = errors.New("redis is full: used memory reached maxmemory and it refuses writes that grow it (messages already scheduled still drain; raise maxmemory or free memory)")

// full wraps err with ErrRedisFull when Redis refused it for memory.
func full(err error) error {
	if err != nil && redis.IsOOMError(err) && !errors.Is(err, ErrRedisFull) {
		return fmt.Errorf("%w: %w", ErrRedisFull, err)
	}
	return err
}

// Memory is what Redis's INFO memory says about its limit and its policy.
// On a cluster it is the master that is fullest, and any master's evicting
// policy.
type Memory struct {
	Used int64 // used_memory, bytes
	Max  int64 // maxmemory, bytes; 0: no limit
	// Policy is maxmemory_policy: noeviction, allkeys-lru, volatile-ttl, …
	Policy string
}

// Evicting reports a policy that may delete any key when Redis is full,
// scheduled messages included: allkeys-lru, allkeys-lfu, allkeys-random.
// The volatile-* policies evict only keys with a TTL, and delaybridge sets
// none on its keys: under them a full Redis refuses writes as noeviction
// does (unless other applications' keys with a TTL can make room).
func (m Memory) Evicting() bool { return strings.HasPrefix(m.Policy, "allkeys-") }

// Full reports a Redis whose used memory reached its maxmemory under a
// policy that does not evict the queue's keys: it refuses writes that grow
// it (ErrRedisFull).
func (m Memory) Full() bool { return m.Max > 0 && m.Used >= m.Max && !m.Evicting() }

// EvictingError is why an evicting policy cannot hold a delay queue, and
// what to do, or nil when the policy keeps every key.
func (m Memory) EvictingError() error {
	if !m.Evicting() {
		return nil
	}
	return fmt.Errorf("maxmemory-policy %s deletes any key when Redis is full, scheduled messages included, without a trace: "+
		"set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, or the managed service's parameter)", m.Policy)
}

// Memory reads INFO memory (readable where CONFIG is disabled, as on
// managed Redis). On a cluster it asks every master.
func (q *Queue) Memory(ctx context.Context) (Memory, error) {
	if c, ok := q.rdb.(*redis.ClusterClient); ok {
		var (
			mu  sync.Mutex
			out Memory
		)
		err := c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			m, err := readMemory(ctx, n)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			out = worse(out, m)
			return nil
		})
		return out, err
	}
	return readMemory(ctx, q.rdb)
}

// worse merges two masters' answers: any evicting policy, the fuller one's
// memory.
func worse(a, b Memory) Memory {
	out := a
	if a.Policy == "" || (b.Evicting() && !a.Evicting()) {
		out.Policy = b.Policy
	}
	if a.Max == 0 || (b.Max > 0 && float64(b.Used)/float64(b.Max) > float64(a.Used)/float64(a.Max)) {
		out.Used, out.Max = b.Used, b.Max
	}
	return out
}

func readMemory(ctx context.Context, c redis.Cmdable) (Memory, error) {
	s, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return Memory{}, fmt.Errorf("read INFO memory: %w", err)
	}
	return parseMemory(s)
}

// parseMemory reads the fields Memory holds from INFO memory's text.
func parseMemory(s string) (Memory, error) {
	var m Memory
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		var err error
		switch k {
		case "used_memory":
			m.Used, err = strconv.ParseInt(v, 10, 64)
		case "maxmemory":
			m.Max, err = strconv.ParseInt(v, 10, 64)
		case "maxmemory_policy":
			m.Policy = v
		default:
			continue
		}
		if err != nil {
			return Memory{}, fmt.Errorf("parse INFO memory %s %q: %w", k, v, err)
		}
		seen++
	}
	if seen < 3 {
		return Memory{}, fmt.Errorf("parse INFO memory: used_memory, maxmemory or maxmemory_policy missing")
	}
	return m, nil
}
