// Package membership is the protocol by which the daemons that share a key
// prefix know each other and split the slots: each replica's heartbeat in
// the replica set (replicas.go: Heartbeat, Leave, Replicas), its report of
// the topics it forwards beside it (served.go: ReportServed, Beat,
// Forwarding), one replica's side of both in one call per beat
// (member.go: Member, View), and who owns which slot among the live
// replicas that forward a topic (ownership.go: rendezvous hashing, Assign,
// Owner, OwnedSlots). store.go holds the Store over a queue's Redis.
//
// The scripts each touch one key of the prefix (queue.ReplicasKey,
// ServedKey), never a slot's, and read Redis's TIME, so replicas whose
// clocks disagree still agree on who is live. The forwarder applies what a
// beat answers (its ownership loop); the CLI, the console, the API and flow
// control read the same to show it. docs/architecture.md (Membership)
// describes the protocol.
package membership
