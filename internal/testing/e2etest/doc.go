// Package e2etest runs the built delaybridge binary as real processes and
// checks what came out of the broker by message number. It serves the
// end-to-end, replica and fault suites (e2e/, cluster/, chaos/):
//
//   - Build compiles cmd/delaybridge once per test binary;
//   - Start runs `delaybridge run` with DELAYBRIDGE_* variables, waits for
//     its HTTP listener and keeps its log (a data race or a panic in the log
//     fails the test); Metric scrapes its /metrics, Records reads its log;
//   - ConnectRedis and ConnectRedisCluster connect to the test Redis or the
//     local Redis Cluster and delete the test's keys afterwards;
//   - Rabbit and Kafka consume what the daemon published;
//   - Plan schedules uniquely numbered messages and Count turns what was
//     delivered (and what was dead-lettered, with its reason) into lost,
//     early and duplicate counts.
//
// Services come from DELAYBRIDGE_TEST_REDIS_URL, DELAYBRIDGE_TEST_AMQP_URL
// and DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS (defaults on 127.0.0.1); a
// missing service fails the test, never skips it.
package e2etest
