package queue

import (
	"context"
	"fmt"
)

// A member that starts like a tick (IsTick) is a recurrence's tick only when
// its slot's recurrence vouches for it: a raw producer can ZADD any bytes,
// and a tick is delivered with the routing key, headers and id its envelope
// names. Claim verifies every such member it takes (Claimed.Tick); the
// scanner delivers the others as what they are (DecodeClaimed): a raw
// member as its bytes, on an envelope topic an invalid envelope.

// tickCheckScript tells which members are ticks of the slot's recurrences.
//
// KEYS    -> slotKeys
// ARGV    -> members that start like a tick
//
// Returns, per member, 1 when the recurrence its envelope names exists in
// the slot in the member's version with the member's spec, zone and
// message (what recurSetScript and tickScript write), else 0.
var tickCheckScript = slotScript(recurLua, `
local out = {}
for i = 1, #ARGV do
  local r = 0
  local ver, rest = string.match(ARGV[i], '^%zrecur%z([^%z]*)%z[^%z]*%z(.*)$')
  local env = rest and string.match(rest, '^[^%z]*%z[^%z]*%z(.*)$')
  if env then
    local ok, v = pcall(cjson.decode, env)
    local cur = ok and type(v) == 'table' and type(v['id']) == 'string' and redis.call('HGET', recur, v['id'])
    if cur then
      local cver, _, _, crest = parse_recur(cur)
      if cver == ver and crest == rest then r = 1 end
    end
  end
  out[#out + 1] = r
end
return out
`)

// verifyTicks sets Tick on the members of c that are ticks of slot's
// recurrences: one script call, only when a member starts like a tick.
func (q *Queue) verifyTicks(ctx context.Context, t Topic, slot int, c *Claim) error {
	var at []int
	var members []any
	for i, m := range c.Messages {
		if IsTick(m.Member) {
			at = append(at, i)
			members = append(members, m.Member)
		}
	}
	if len(at) == 0 {
		return nil
	}
	k := t.Keys(slot)
	res, err := tickCheckScript.Run(ctx, q.rdb, slotKeys(k), members...).Int64Slice()
	if err != nil {
		return fmt.Errorf("verify %d ticks in %s: %w", len(at), k.Recur, err)
	}
	for j, i := range at {
		c.Messages[i].Tick = j < len(res) && res[j] == 1
	}
	return nil
}

// DecodeClaimed is the message to deliver for a claimed member: a
// recurrence's tick only when Claim verified it (Claimed.Tick), else what
// the member is on t (a raw member's bytes, or an envelope), never a tick.
func (t Topic) DecodeClaimed(c Claimed) (Message, error) {
	if c.Tick {
		return t.Decode(c.Member)
	}
	return t.decodePlain(c.Member)
}
