// Package e2etest runs the built delaybridge binary as real processes and
// checks what came out of the broker by message number. It serves the
// end-to-end and fault suites (e2e/, chaos/):
//
//   - Build compiles cmd/delaybridge once per test binary;
//   - Start runs `delaybridge run` with DELAYBRIDGE_* variables, waits for
//     its HTTP listener and keeps its log (a data race or a panic in the log
//     fails the test);
//   - Rabbit and Kafka consume what the daemon published;
//   - Plan schedules uniquely numbered messages and Count turns what was
//     delivered (and what was dead-lettered, with its reason) into lost,
//     early and duplicate counts.
//
// Services come from DELAYBRIDGE_TEST_REDIS_URL and DELAYBRIDGE_TEST_AMQP_URL
// (defaults on 127.0.0.1); a missing service fails the test, never skips it.
package e2etest
