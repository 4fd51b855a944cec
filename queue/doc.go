// Package queue owns delaybridge's Redis data model: key names, slots, the
// member formats (raw and envelope), the Lua scripts that claim, ack, retry,
// release and reap messages, the wake-up channel, and the producer API:
// Schedule, ScheduleMember, ScheduleBatch, Cancel, CancelID, Reschedule, Get,
// the dead set's DeadList, DeadFind, Requeue and Purge, and recurring
// messages: SetRecurrence, RemoveRecurrence, Recurrences.
//
// Files follow the data: queue.go (Queue, over one Redis), keys.go (key names,
// slots, a topic's topic-wide FlowKeys), scripts.go (the KEYS layout and Lua
// helpers every slot script shares), then one file per operation with its
// script right above the method that runs it: claim.go, settle.go (ack, retry,
// release), extend.go (leases), reap.go, bury.go (Bury: dead-letter a member at
// once), schedule.go, batch.go, cancel.go, reschedule.go, lookup.go (Get),
// dead.go (listing), requeue.go, purge.go, purgetopic.go (TopicKeys,
// PurgeTopic: every key of one topic's data), stats.go, list.go (List: paged
// listing by state), inspect.go (Inspect: one message in any state), find.go
// (FindMessageID: a member by its MessageID), pause.go (Pause, Resume); wake.go
// (wake-ups), keyspace.go (keyspace notifications a scanner can sleep on),
// keyplace.go (KeyLocator: the slot of a notified key; EventAdds),
// memory.go (Redis's maxmemory and policy, ErrRedisFull), millis.go (scores and times), envelope.go (the
// envelope codec's names, kept here from package envelope, which owns the
// format) and message.go (member formats), producer.go (the producer API's types and errors);
// topicname.go (CheckTopicName), registry.go (the topic registry,
// <prefix>:topics: Layout, Topic, Topics, CheckTopic), register.go (a daemon's
// Register), registryedit.go (an operator's SetLayout, ForgetLayout),
// layoutcheck.go (producers checked against the registry), resize.go (finding a
// message by member or id after a resize) and stranded.go (slots beyond a
// topic's slot count); recurspec.go (the names of internal/recurspec, which
// parses specs and zones with the gap and daylight-saving rules), recur.go (recurrences: set, remove, list) and recurtick.go (tick
// members and the script that settles a tick and writes the next),
// tickverify.go (a claimed member is a tick only when its recurrence vouches
// for it: the Lua the claim script checks that with, DecodeClaimed) and
// tickid.go (the tick id form, reserved for ticks); intakeid.go (the id
// form reserved for the ids intakes generate, IntakeID); trace.go (a
// producer's W3C trace context, kept as an envelope's headers); durable.go
// (Durability: what a write must reach before it is acknowledged, the WAIT
// after it), replicagate.go (how many replicas count, read from INFO
// replication, so acceptance stops rather than lies) and evalall.go (scripts
// run in pipelines, one WAIT per pipeline and node);
// dedup.go (the dedup window: acked ids remembered in a slot's delivered set,
// so a retried schedule is a duplicate); msgsize.go (a topic's message size
// limit, checked when a message is accepted: ErrTooLarge); fair.go (fair
// share: the per-slot state that gives each key of a fair topic its turn,
// and its index calls), fairclaim.go (the fair topic's claim, round-robin
// among keys, bounded by its limit), fairkeys.go (TopKeys: the keys with
// the most messages scheduled, for stats --keys), fairpause.go (PauseKey:
// one key held while the others go on) and fairrate.go (a key's rate: a
// token bucket per key in each slot); firstscore.go (a sorted set's lowest
// score found from counts, never by reading a member) and waiting.go
// (topics scheduled to but registered by no daemon). Flow
// control's state (rate limits, run-time limits, held and environment reports)
// is package flowstate's, on FlowKeys.
//
// Every slot script touches the keys of exactly one topic×slot, and all keys
// of a slot share one Redis Cluster hash tag, so every such call runs on one
// node and is atomic there. The membership protocol (heartbeats, served
// reports, slot owners) is package membership's, on ReplicasKey;
// docs/architecture.md (Scripts) lists every script with its KEYS. "Now" is
// always Redis's own TIME, read inside the scripts, so replicas whose clocks
// disagree still agree on what is due.
//
// Guarantees this package provides to the forwarder:
//   - Claim never returns a member whose score is after Redis's TIME.
//   - Claims come in score order and move members to the in-flight set with a
//     lease, recording the original due time once.
//   - Ack, Retry and Release change nothing for a member that is no longer in
//     flight (another replica already handled it, or a producer replaced it).
//   - Reap returns expired leases to the scheduled set exactly once.
//   - A recurrence has at most one tick waiting: SettleTicks writes the next
//     tick only while the recurrence exists in the tick's version and names
//     that tick, so duplicates, removes and replaces never double or revive
//     one.
//   - On envelope topics the per-slot id index (the :idx:<n> HASHes, and the
//     :ids HASH of the previous layout) names a member exactly while it is
//     scheduled or in flight: every script keeps it so, and the reap sweep
//     drops what a producer that bypassed the scripts, or a daemon of the
//     previous version, left behind.
//
// And to producers:
//   - A due time that cannot be honoured (before 1970, or a millisecond a
//     float64 score cannot hold) is refused with ErrBadDueTime, never
//     delivered early.
//   - Scheduling an envelope id that exists replaces that message atomically.
//   - Cancel and Reschedule of a message already claimed change nothing and
//     report ErrInFlight.
//   - Every successful schedule announces itself on WakeChannel; Wakes
//     delivers them parsed.
package queue
