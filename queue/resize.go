package queue

import (
	"hash/crc32"
	"slices"
)

// A topic's slot count can change (see README, "Resizing a topic"). The
// messages already written stay in the slot their old count gave them: the
// forwarder finds and drains slots beyond the count (StrandedSlots), and a
// message of a slot below it is scanned anyway. What an old slot breaks is
// finding one message by its member or id, since its slot is computed with
// the current count. Cancel, CancelID, Reschedule and Get therefore look
// in the computed slot first and then, when it has no such message, in the
// slot the same member or id has under every other slot count. Counts are
// powers of two, so a key's slot under count 2^k is CRC32 & (2^k-1): at
// most log2(MaxSlots) more places, whatever the old count was, and the
// extra calls are made only when the message is not where it belongs.
//
// Scheduling an envelope id again does not look: the new version goes to
// the id's current slot, and a version still waiting in an old slot is
// delivered too. Cancel it by id first (CancelID finds it) when that
// matters, or let the old slots drain before producers reuse ids.

// slotCandidates are the slots a member or id (key) may be in: its slot
// under the topic's count first, then its slot under every other count.
// An adopted key has only slot 0.
func (t Topic) slotCandidates(key []byte) []int {
	first := Slot(key, t.slots())
	if t.Key != "" {
		return []int{first}
	}
	out := []int{first}
	sum := crc32.ChecksumIEEE(key)
	for n := 1; n <= MaxSlots; n *= 2 {
		s := int(sum & uint32(n-1))
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// memberCandidates are slotCandidates of a member: by its id on envelope
// topics (a member that is not a valid envelope: by its bytes).
func (t Topic) memberCandidates(member []byte) []int {
	if t.envelope() {
		if id, err := EnvelopeID(member); err == nil {
			return t.slotCandidates([]byte(id))
		}
	}
	return t.slotCandidates(member)
}
