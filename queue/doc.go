// Package queue owns delaybridge's Redis data model: key names, slots, the Lua
// scripts that claim, ack, retry, release and reap messages, and the producer
// API (Schedule, Cancel).
//
// Every script touches the keys of exactly one topic×slot, and all keys of a
// slot share one Redis Cluster hash tag, so every call runs on one node and is
// atomic there. "Now" is always Redis's own TIME, read inside the scripts, so
// replicas whose clocks disagree still agree on what is due.
//
// Guarantees this package provides to the forwarder:
//   - Claim never returns a member whose score is after Redis's TIME.
//   - Claims come in score order and move members to the in-flight set with a
//     lease, recording the original due time once.
//   - Ack, Retry and Release change nothing for a member that is no longer in
//     flight (another replica already handled it).
//   - Reap returns expired leases to the scheduled set exactly once.
package queue
