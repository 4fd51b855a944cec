package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strings"
	"time"
)

// DefaultPrefix is the key prefix used when none is configured.
const DefaultPrefix = "dq"

// MaxSlots is the largest number of slots a topic may have.
const MaxSlots = 1024

// Format is how a topic's members encode a message.
type Format string

const (
	// FormatRaw: the member is the message body, byte for byte.
	FormatRaw Format = "raw"
	// FormatEnvelope: the member is a JSON envelope with id, body, headers and
	// routing key.
	FormatEnvelope Format = "envelope"
)

// Topic names a stream of delayed messages and where its keys live.
type Topic struct {
	// Name is the topic's name, used in keys, metrics and message headers.
	Name string
	// Prefix is the key prefix; empty means DefaultPrefix.
	Prefix string
	// Slots is the number of slots, a power of two from 1 to MaxSlots; 0 means 1.
	Slots int
	// Key, when set, adopts an existing single ZSET (only with one slot): it is
	// the scheduled set and the other keys are derived from it.
	Key string
	// Format is the member format; empty means FormatRaw.
	Format Format
	// DedupWindow, on an envelope topic, is how long an id stays known after
	// its message was delivered (Ack): scheduling it again meanwhile is a
	// duplicate, accepted and not scheduled (Receipt.Duplicate). The ack
	// reads it (the forwarder's topic settings) to remember ids; a producer
	// that sets it also answers a schedule of an id in flight (claimed,
	// published, waiting for its ack) as a duplicate, so a retry during the
	// delivery is that one delivery (see putLua). A topic read from the
	// registry (Layout.Topic) carries the window its daemon registered.
	// 0 remembers nothing.
	DedupWindow time.Duration
	// MaxMessageSize is the largest body a schedule of t accepts, in bytes
	// (ErrTooLarge past it, nothing written); 0: no limit. The daemon's
	// configuration sets DefaultMaxMessageSize unless told otherwise.
	MaxMessageSize int
	// Fair, on an envelope topic, gives each key (Message.Key) with due
	// messages its turn: claims go round-robin among keys, in due order
	// within each key (see docs/flow-control.md, "Fair share"). Off, the
	// topic is claimed in score order and its fair keys are never touched.
	Fair bool
	// KeyRateLimit, on a fair topic, is the most deliveries per second of
	// each key, summed over every replica (0: none): each slot gives a key
	// KeyRateLimit / slots. SetKeyRate overrides it per key at run time.
	KeyRateLimit float64
}

// SlotKeys are the Redis keys of one topic×slot. They share one hash tag.
type SlotKeys struct {
	Scheduled  string // ZSET member → due time (ms)
	Inflight   string // ZSET member → lease deadline (ms)
	Due        string // HASH member → original due time while claimed or retrying
	Attempts   string // HASH member → failed publish attempts
	Dead       string // ZSET member → time of death (ms)
	DeadReason string // HASH member → last error text
	// DeadAttempts is HASH member → the failed publish attempts a dead
	// member had when it died (absent: none); kept apart from Attempts so
	// the hot path's "has anything failed" test stays cheap.
	DeadAttempts string
	IDs          string // HASH id → member (envelope topics)
	Paused       string // HASH since → ms, reason → text, while the topic is paused (see Pause)
	// Index is the prefix of the id index of envelope topics: idBuckets
	// HASHes "<Index>:<n>", id → score (see idsLua in scripts.go).
	Index string
	// Recur is HASH recurrence id → its version, next tick, last delivered
	// tick, spec, zone and message (see recurLua in recur.go).
	Recur string
	// Delivered is ZSET envelope id → until when (ms) it stays known after
	// its message was acked, on topics with a DedupWindow: a schedule of
	// that id meanwhile is a duplicate (see putLua and ackScript).
	Delivered string
	// The fair-share state of a fair topic (see fair.go): FairHeads is a
	// ZSET of "<key>\x00<due, 8 ordered bytes><member>", all scores 0, that
	// finds each key's earliest message; FairWaiting ZSET key → its head's
	// due time, for keys whose head is not due; FairReady ZSET key → its
	// turn, for keys whose head is due; FairCount ZSET key → how many
	// messages it has scheduled. A key is in them only while it has some.
	// FairPaused HASH key → when it was paused (Unix ms), for the keys
	// PauseKey holds; it exists while one is. FairLimits HASH "r:<key>" →
	// the key's rate set at run time (SetKeyRate), "b:<key>" → its token
	// bucket in this slot ("<tokens> <ms>", while it has messages).
	FairHeads   string
	FairWaiting string
	FairReady   string
	FairCount   string
	FairPaused  string
	FairLimits  string
}

// idBuckets is how many HASHes the id index of one slot spreads over: each
// stays a listpack (hash-max-listpack-entries, 512 by default) up to about
// 130,000 ids per slot, and past that costs about 50 bytes more per message.
// The scripts hold the same number (bucket in idsLua).
const idBuckets = 256

// Validate reports whether the topic can be used.
func (t Topic) Validate() error {
	if t.Name == "" {
		return fmt.Errorf("topic name is empty")
	}
	n := t.slots()
	if n < 1 || n > MaxSlots || n&(n-1) != 0 {
		return fmt.Errorf("topic %s: slots %d is not a power of two from 1 to %d", t.Name, t.Slots, MaxSlots)
	}
	if t.Key != "" && n != 1 {
		return fmt.Errorf("topic %s: an adopted key needs exactly one slot, not %d", t.Name, n)
	}
	switch t.Format {
	case "", FormatRaw, FormatEnvelope:
	default:
		return fmt.Errorf("topic %s: unknown format %q", t.Name, t.Format)
	}
	if t.Fair && !t.envelope() {
		return fmt.Errorf("topic %s: fair share needs the envelope format (a raw member has no key)", t.Name)
	}
	return nil
}

func (t Topic) slots() int {
	if t.Slots == 0 {
		return 1
	}
	return t.Slots
}

// SlotCount is the number of slots of the topic (at least 1).
func (t Topic) SlotCount() int { return t.slots() }

// KeyPrefix is the prefix of the topic's keys: Prefix, or DefaultPrefix when
// empty. The replica set and the wake channel of the daemon that forwards the
// topic live under the same prefix.
func (t Topic) KeyPrefix() string {
	if t.Prefix == "" {
		return DefaultPrefix
	}
	return t.Prefix
}

// Keys returns the keys of one slot. For slot s of topic "orders" with prefix
// "dq" the scheduled set is "dq:{orders:s}"; for an adopted key K it is K and
// the others are "{K}:inflight", … (K itself when it already has a hash tag).
func (t Topic) Keys(slot int) SlotKeys {
	var base, sched string
	if t.Key != "" {
		sched = t.Key
		if hasHashTag(t.Key) {
			base = t.Key
		} else {
			base = "{" + t.Key + "}"
		}
	} else {
		base = fmt.Sprintf("%s:{%s:%d}", t.KeyPrefix(), t.Name, slot)
		sched = base
	}
	return SlotKeys{
		Scheduled:    sched,
		Inflight:     base + ":inflight",
		Due:          base + ":due",
		Attempts:     base + ":attempts",
		Dead:         base + ":dead",
		DeadReason:   base + ":dead:reason",
		DeadAttempts: base + ":dead:attempts",
		IDs:          base + ":ids",
		Paused:       base + ":paused",
		Index:        base + ":idx",
		Recur:        base + ":recur",
		Delivered:    base + ":delivered",
		FairHeads:    base + ":fair:heads",
		FairWaiting:  base + ":fair:waiting",
		FairReady:    base + ":fair:ready",
		FairCount:    base + ":fair:count",
		FairPaused:   base + ":fair:paused",
		FairLimits:   base + ":fair:limits",
	}
}

// hasHashTag reports whether Redis Cluster would hash only part of key: it has
// a '{' followed later by a '}' with at least one byte between them.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	close := strings.IndexByte(key[open+1:], '}')
	return close > 0
}

// FlowKeys are a topic's topic-wide keys, in one hash tag of their own
// (<prefix>:{<topic>}:…, or {K}:… for an adopted key K): every slot shares
// them, and each script touches one of them only, so a Redis Cluster runs
// it on one node.
type FlowKeys struct {
	Bucket string // HASH tokens, at (ms): the rate limit's token bucket
	Limits string // HASH rate, hold_above, since: limits set at run time (flowstate, Store.SetLimits)
	Held   string // HASH replica → why it holds the topic now (flowstate, Store.ReportHeld)
	Env    string // HASH replica → the limits its environment gives the topic (flowstate, Store.ReportEnv)
}

// FlowKeys returns the topic-wide keys of t.
func (t Topic) FlowKeys() FlowKeys {
	base := fmt.Sprintf("%s:{%s}", t.KeyPrefix(), t.Name)
	if t.Key != "" {
		base = "{" + t.Key + "}"
		if hasHashTag(t.Key) {
			base = t.Key
		}
	}
	return FlowKeys{Bucket: base + ":rate", Limits: base + ":limits", Held: base + ":held", Env: base + ":env"}
}

// ReplicasKey is the ZSET of live replicas (id → heartbeat deadline, ms).
func ReplicasKey(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + ":replicas"
}

// Slot returns the slot of a member: CRC32-IEEE(member) & (slots-1). Any
// producer, in any language, can compute the same.
func Slot(member []byte, slots int) int {
	if slots <= 1 {
		return 0
	}
	return int(crc32.ChecksumIEEE(member) & uint32(slots-1))
}

// SlotOf returns the slot of a member of t: from its bytes on raw topics, from
// its id on envelope topics (a member that is not a valid envelope falls back
// to its bytes; Locate reports the error instead). A recurrence's tick is in
// the slot of the recurrence's id, on either format.
func (t Topic) SlotOf(member []byte) int {
	if IsTick(string(member)) {
		if tk, err := parseTick(string(member)); err == nil {
			return t.SlotOfID(tk.id)
		}
	}
	if t.envelope() {
		if id, err := EnvelopeID(member); err == nil {
			return t.SlotOfID(id)
		}
	}
	return Slot(member, t.slots())
}

// MessageID is the stable id of a raw member: the hex of the first 16 bytes of
// its SHA-256. Every delivery of the same member carries the same id.
func MessageID(member []byte) string {
	sum := sha256.Sum256(member)
	return hex.EncodeToString(sum[:16])
}
