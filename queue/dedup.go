package queue

// The dedup window (Topic.DedupWindow): an envelope id stays known in its
// slot's delivered set (SlotKeys.Delivered, ZSET id -> until, ms) for the
// window after its message was acked, and a schedule of it meanwhile is a
// duplicate (putLua returns 3, Receipt.Duplicate). The set holds the id, not
// the message: about 50 bytes an id while a slot's set is a listpack
// (zset-max-listpack-entries, 128 by default), about 140 beyond (see
// docs/operations.md and TestDeliveredMemoryPerID). No sweeper walks the
// keyspace: each ack removes at most twice as many expired entries as it
// adds, and a schedule of an id whose entry expired removes it.
//
// Cancel and reschedule find only what is scheduled or in flight, so a
// remembered id is not found by them (ErrNotFound), as before; a message
// dead-lettered, cancelled or replaced is not remembered: only an ack
// remembers. Ticks of recurrences are never remembered (their acks take
// another path).

// dedupLua defines remember(known, window): add the ids known to the
// delivered set until now + window (ms), then remove up to 2 × #known + 1
// entries whose time has passed, the oldest first. The ack runs while Redis
// is full (allowOOMLua), and so does this ZADD: what it adds (an id) is less
// than what the same ack frees (the member, its index entry). Should Redis
// refuse it all the same, it is skipped (pcall), not the ack: remembering is
// worth less than the ack. Needs chunk.
const dedupLua = `
local function remember(known, window)
  if window <= 0 or #known == 0 then return end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local keep = string.format('%.0f', now + window)
  for c = 1, #known, chunk do
    local args = {}
    for i = c, math.min(c + chunk - 1, #known) do
      args[#args + 1] = keep
      args[#args + 1] = known[i]
    end
    redis.pcall('ZADD', deliv, unpack(args))
  end
  local old = redis.call('ZRANGEBYSCORE', deliv, '-inf', string.format('%.0f', now), 'LIMIT', 0, 2 * #known + 1)
  for c = 1, #old, chunk do
    redis.call('ZREM', deliv, unpack(old, c, math.min(c + chunk - 1, #old)))
  end
end
`

// dedupMillis is the ack script's window argument: whole ms, 0 on raw topics.
func (t Topic) dedupMillis() int64 {
	if !t.envelope() || t.DedupWindow <= 0 {
		return 0
	}
	return max(t.DedupWindow.Milliseconds(), 1)
}
