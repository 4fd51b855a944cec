package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// env is what every scenario shares: the options and the connections of
// the bench's own producer and consumers.
type env struct {
	o         options
	rdb       *redis.Client
	redisAddr string
	q         *queue.Queue
	amqp      *amqp091.Connection
	devkafka  *devkafka // while a Kafka scenario runs
	// steadyRun is steady's result once it ran, for backlog to compare with.
	steadyRun *Scenario
	// burstRun is burst's result once it ran, for fairness to compare with.
	burstRun *Scenario
}

func newEnv(ctx context.Context, o options) (*env, error) {
	opt, err := redis.ParseURL(o.redisURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	opt.PoolSize = 32
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis at %s is required: %w", opt.Addr, err)
	}
	conn, err := amqp091.Dial(o.amqpURL)
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("rabbitmq at %s is required: %w", redactURL(o.amqpURL), err)
	}
	return &env{o: o, rdb: rdb, redisAddr: opt.Addr, q: queue.New(rdb), amqp: conn}, nil
}

func (e *env) close() {
	e.amqp.Close()
	e.rdb.Close()
}

// prefix is a fresh key prefix for one scenario.
func (e *env) prefix(scenario string) string {
	return "bench-" + scenario + "-" + e.o.scenarioID
}

// topic is the benchmark topic under prefix.
func benchTopic(prefix string, slots int) queue.Topic {
	return queue.Topic{Name: "bench", Prefix: prefix, Slots: slots}
}

// scheduled is one member to schedule.
type scheduled struct {
	member []byte
	score  float64
}

// schedule writes msgs to their slots of t with pipelined variadic ZADDs.
func (e *env) schedule(ctx context.Context, t queue.Topic, msgs []scheduled) error {
	const perCmd, perPipe = 500, 40
	bySlot := map[int][]redis.Z{}
	pipe := e.rdb.Pipeline()
	flushSlot := func(slot int) {
		zs := bySlot[slot]
		if len(zs) == 0 {
			return
		}
		pipe.ZAdd(ctx, t.Keys(slot).Scheduled, zs...)
		bySlot[slot] = nil
	}
	exec := func() error {
		if pipe.Len() == 0 {
			return nil
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	for _, m := range msgs {
		slot := queue.Slot(m.member, t.SlotCount())
		bySlot[slot] = append(bySlot[slot], redis.Z{Score: m.score, Member: m.member})
		if len(bySlot[slot]) >= perCmd {
			flushSlot(slot)
			if pipe.Len() >= perPipe {
				if err := exec(); err != nil {
					return fmt.Errorf("schedule: %w", err)
				}
			}
		}
	}
	for slot := range bySlot {
		flushSlot(slot)
	}
	if err := exec(); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	return nil
}

// dropKeys deletes every key under prefix.
func (e *env) dropKeys(prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iter := e.rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) >= 500 {
			e.rdb.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		e.rdb.Unlink(ctx, keys...)
	}
	// A big scenario (backlog's millions) leaves Redis freeing them in the
	// background: the next scenario starts once it is done.
	e.waitLazyFree(ctx)
}

// redisCounters are Redis-wide command counters.
type redisCounters struct {
	total int64 // total_commands_processed: script internals included
	calls int64 // script calls (EVALSHA, EVAL)
	// work is the calls of every command in commandstats (which counts the
	// commands scripts run too) except PING and INFO: the noise probe's
	// PINGs and these INFO reads are the bench's own, not the workload's.
	work int64
	cpu  float64 // used_cpu_sys + used_cpu_user (s) of the Redis process
	mem  int64   // used_memory
}

func (e *env) redisCounters(ctx context.Context) (redisCounters, error) {
	info, err := e.rdb.Info(ctx, "stats", "commandstats", "cpu", "memory").Result()
	if err != nil {
		return redisCounters{}, err
	}
	var c redisCounters
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			c.total, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			c.mem, _ = strconv.ParseInt(v, 10, 64)
		}
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				s, _ := strconv.ParseFloat(v, 64)
				c.cpu += s
			}
		}
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			if v, ok := strings.CutPrefix(line, cmd); ok {
				c.calls += statCalls(v)
			}
		}
		if name, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(name, "cmdstat_") && name != "cmdstat_ping" && name != "cmdstat_info" {
			c.work += statCalls(v)
		}
	}
	return c, nil
}

// statCalls reads calls=N from a commandstats line.
func statCalls(v string) int64 {
	for _, f := range strings.Split(v, ",") {
		if n, ok := strings.CutPrefix(f, "calls="); ok {
			c, _ := strconv.ParseInt(n, 10, 64)
			return c
		}
	}
	return 0
}

// rawClaimAck measures Redis's own ceiling: n due members in slots slots,
// claimed in batches of batch and acked batch by batch through the queue
// package, one goroutine per slot (as the daemon's scanners do), nothing
// else in between. It returns members per second.
func (e *env) rawClaimAck(ctx context.Context, n, slots, batch, size int) (float64, error) {
	prefix := e.prefix("raw-redis")
	defer e.dropKeys(prefix)
	t := benchTopic(prefix, slots)
	due := float64(time.Now().Add(-time.Second).UnixMilli())
	msgs := make([]scheduled, n)
	for i := range msgs {
		msgs[i] = scheduled{member: body(i, int64(due), size), score: due}
	}
	if err := e.schedule(ctx, t, msgs); err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	got := 0
	start := time.Now()
	for slot := range slots {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := e.q.Claim(ctx, t, slot, batch, 30*time.Second)
				if err == nil && len(c.Messages) > 0 {
					members := make([]string, len(c.Messages))
					for i, m := range c.Messages {
						members[i] = m.Member
					}
					_, err = e.q.Ack(ctx, t, slot, members)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				got += len(c.Messages)
				mu.Unlock()
				if err != nil || len(c.Messages) < batch {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	if got != n {
		return 0, fmt.Errorf("raw claim: claimed %d of %d", got, n)
	}
	return perSecond(float64(n), elapsed), nil
}
