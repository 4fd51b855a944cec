package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// evalAll runs one script per call through pipelines of EVALSHA, loading the
// script once if Redis does not know it yet (a pipeline cannot fall back to
// EVAL per command as Script.Run does). Each command carries its own error.
//
// When q waits (see WithDurability), each pipeline ends with the WAIT that
// confirms its writes, on its connection; on Redis Cluster the calls go in
// one pipeline per master they write to. confirms[i] is nil when call i's
// write was confirmed, else it wraps ErrNotReplicated. err wraps
// ErrTooFewReplicas when nothing was written because too few replicas are
// connected.
func (q *Queue) evalAll(ctx context.Context, s *redis.Script, calls []scriptCall) (cmds []*redis.Cmd, confirms []error, err error) {
	if q.waiting() {
		if err := q.admit(ctx); err != nil {
			return nil, nil, err
		}
	}
	cmds = make([]*redis.Cmd, len(calls))
	confirms = make([]error, len(calls))
	pending := make([]int, len(calls))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if err := q.evalPending(ctx, s, calls, pending, cmds, confirms); err != nil {
			return nil, nil, err
		}
		var missing []int
		for _, i := range pending {
			if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				missing = append(missing, i)
			}
		}
		if len(missing) == 0 || attempt > 0 {
			break
		}
		if err := s.Load(ctx, q.rdb).Err(); err != nil {
			return nil, nil, fmt.Errorf("load script: %w", err)
		}
		pending = missing
	}
	return cmds, confirms, nil
}

// evalPending sends the pending calls in pipelines of up to batchChunk, per
// node when q waits on a Cluster, each ending with q's WAIT when q waits.
func (q *Queue) evalPending(ctx context.Context, s *redis.Script, calls []scriptCall, pending []int, cmds []*redis.Cmd, confirms []error) error {
	groups, err := q.nodeGroups(ctx, calls, pending)
	if err != nil {
		return err
	}
	for _, g := range groups {
		for start := 0; start < len(g.calls); start += batchChunk {
			chunk := g.calls[start:min(start+batchChunk, len(g.calls))]
			pipe := g.client.Pipeline()
			for _, i := range chunk {
				cmds[i] = s.EvalSha(ctx, pipe, calls[i].keys, calls[i].args...)
			}
			var w waitCmds
			if q.waiting() {
				w = q.addWait(ctx, pipe)
			}
			_, _ = pipe.Exec(ctx) // errors are read per command below
			if q.waiting() {
				c := q.confirmed(w)
				for _, i := range chunk {
					confirms[i] = c
				}
			}
		}
	}
	return nil
}

// nodeGroup is the calls that go to one client's pipelines.
type nodeGroup struct {
	client redis.Cmdable
	calls  []int
}

// nodeGroups puts the pending calls in one group for q's client, or, when
// q waits on a Redis Cluster, one per master that owns their keys: a WAIT
// confirms only the writes of its own connection.
func (q *Queue) nodeGroups(ctx context.Context, calls []scriptCall, pending []int) ([]nodeGroup, error) {
	cc, cluster := q.rdb.(*redis.ClusterClient)
	if !cluster || !q.waiting() {
		return []nodeGroup{{client: q.rdb, calls: pending}}, nil
	}
	var groups []nodeGroup
	at := map[*redis.Client]int{}
	for _, i := range pending {
		node, err := cc.MasterForKey(ctx, calls[i].keys[0])
		if err != nil {
			return nil, fmt.Errorf("find the master of %s: %w", calls[i].keys[0], err)
		}
		g, ok := at[node]
		if !ok {
			g = len(groups)
			at[node] = g
			groups = append(groups, nodeGroup{client: node})
		}
		groups[g].calls = append(groups[g].calls, i)
	}
	return groups, nil
}
