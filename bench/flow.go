package main

import (
	"context"
	"fmt"
	"strconv"
)

// rateLimitedShare is the rate limit of the rate-limited scenario, as a
// share of the burst: the burst takes about 1/rateLimitedShare seconds.
const rateLimitedShare = 0.1

// runRateLimited: the burst's messages due at one instant on a topic with
// DELAYBRIDGE_TOPIC_BENCH_RATE_LIMIT, so every batch first asks Redis for
// permits. Its per-message costs (daemon CPU, Redis CPU and commands) sit
// beside the unlimited burst's in the table: the price of the limit. The
// target is the rate itself: delivered at the limit, within 10 %.
func runRateLimited(ctx context.Context, e *env) (Scenario, error) {
	n, slots := e.o.sizes.burst, e.o.sizes.burstSlots
	rate := float64(n) * rateLimitedShare
	r := Scenario{Messages: n, Ceiling: rate, Ceilings: map[string]float64{"rate_limit": rate}}
	prefix, target, drop, err := e.space("rate-limited")
	if err != nil {
		return r, err
	}
	defer drop()
	vars := amqpVars(prefix, target, slots)
	vars["DELAYBRIDGE_TOPIC_BENCH_RATE_LIMIT"] = strconv.FormatFloat(rate, 'f', -1, 64)
	if err := e.burstThroughDaemon(ctx, &r, prefix, vars, slots, n, 0, func(tr *tracker) (func(), error) {
		return e.consume(target, tr)
	}); err != nil {
		return r, err
	}
	r.Ratio = ratio(r.Throughput, rate)
	r.target("throughput / rate limit", r.Ratio, ">=", 0.9, "", fmt.Sprintf("%.0f vs %.0f msg/s", r.Throughput, rate))
	r.target("throughput / rate limit", r.Ratio, "<=", 1.1, "", fmt.Sprintf("%.0f vs %.0f msg/s", r.Throughput, rate))
	r.checkAlways()
	return r, nil
}
