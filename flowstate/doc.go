// Package flowstate owns flow control's shared state in Redis: the rate
// limiter every replica takes permits from, the limits set at run time
// (delaybridge limit, the console), the replicas' reports that they hold a
// topic, and the limits each replica's environment gives a topic. The
// forwarder writes it and obeys it; stats, the CLI and the console read it.
// It holds no words for people: internal/flowtext says what it means.
//
// Its keys are a topic's topic-wide keys (queue.FlowKeys), one hash tag per
// topic beside the topic's slots, and each script touches one of them only,
// so a Redis Cluster runs every call on one node. It uses none of the
// queue's slot scripts; "now" is Redis's TIME, as in the queue.
//
// Files: store.go (Store, over a queue's Redis), ratelimit.go (the token
// bucket and its window log: Acquire), limits.go (limits set at run time:
// SetLimits, ClearLimits, LimitsOf), flowlimits.go (the limits in force:
// Limits, EnvLimits, Override.Shown), reports.go (a replica's report in a
// topic-wide HASH, with its deadline), held.go (ReportHeld, HeldOf) and
// envreport.go (ReportEnv, EnvOf, LimitsShown).
//
// What it guarantees:
//   - A topic's rate limit is one budget over every replica, refilled from
//     Redis's clock, so replicas whose clocks disagree or that come and go
//     share it; no 1-second window grants more than the rate.
//   - A limit set at run time applies on every replica within a second and
//     overrides the environment's until cleared.
//   - A replica's report lives until the replica deletes it or its deadline
//     passes (a replica that died), and its key expires with the last one.
//   - Every write runs on a full Redis: it is a few small keys per topic,
//     and flow control must keep working while the backlog drains.
package flowstate
