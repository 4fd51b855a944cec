package queue

// A member that starts like a tick (IsTick) is a recurrence's tick only when
// its slot's recurrence vouches for it: a raw producer can ZADD any bytes,
// and a tick is delivered with the routing key, headers and id its envelope
// names. The claim script verifies every such member it takes, in the same
// call (Claimed.Tick); the scanner delivers the others as what they are
// (DecodeClaimed): a raw member as its bytes, on an envelope topic an invalid
// envelope.

// tickLua defines looks_tick(m), true when member m starts like a tick (the
// prefix IsTick checks: the only work a member that is not one costs), and
// vouched(m), true when the recurrence m's envelope names exists in the slot
// in m's version with m's spec, zone and message (what recurSetScript and
// tickScript write). Needs recurLua.
const tickLua = `
local function looks_tick(m)
  return string.sub(m, 1, 7) == '\0recur\0'
end
local function vouched(m)
  local ver, rest = string.match(m, '^%zrecur%z([^%z]*)%z[^%z]*%z(.*)$')
  local env = rest and string.match(rest, '^[^%z]*%z[^%z]*%z(.*)$')
  if not env then return false end
  local ok, v = pcall(cjson.decode, env)
  local cur = ok and type(v) == 'table' and type(v['id']) == 'string' and redis.call('HGET', recur, v['id'])
  if not cur then return false end
  local cver, _, _, crest = parse_recur(cur)
  return cver == ver and crest == rest
end
`

// DecodeClaimed is the message to deliver for a claimed member: a
// recurrence's tick only when Claim verified it (Claimed.Tick), else what
// the member is on t (a raw member's bytes, or an envelope), never a tick.
func (t Topic) DecodeClaimed(c Claimed) (Message, error) {
	if c.Tick {
		return t.Decode(c.Member)
	}
	return t.decodePlain(c.Member)
}
