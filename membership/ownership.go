package membership

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strconv"

	"github.com/delaybridge/delaybridge/queue"
)

// Which replica owns which slot is a fact of the data model: every replica
// (and the CLI and the console, to show it) computes it from the live set
// of the replica heartbeat (replicas.go) and the topics each live replica
// reports it forwards (served.go: Forwarding.Assign), and nothing else.

// Assign shares the slots of topic among replicas and returns the owner of
// each slot ("" for every slot when there are no replicas). Every replica
// owns slots/len(replicas) slots, rounded down or up: plain rendezvous
// hashing (Owner) leaves a replica of three with anywhere from about 14 to
// 30 of 64 slots, and the busiest replica would bound the throughput.
//
// It is rendezvous hashing with bounded loads: every (slot, replica) pair
// gets its rendezvous weight, and the pairs are taken from the heaviest down,
// each giving the slot to the replica unless the slot is taken or the replica
// is full. A replica is full at the rounded-up share, or at the rounded-down
// one once slots%len(replicas) replicas hold the rounded-up share. So a slot
// stays with its rendezvous owner unless that owner is full, and a replica
// that joins or leaves moves about its share of slots and a little more
// (measured over random replica ids with 64 slots: 3 to 4 replicas moves 18
// slots on average, 16 at the least; losing one of 3 moves 23, 21 or 22 at
// the least). Every replica computes the same answer from the same live set.
func Assign(replicas []string, topic string, slots int) []string {
	owners := make([]string, slots)
	n := len(replicas)
	if n == 0 || slots <= 0 {
		return owners
	}
	type pair struct {
		w       uint64
		slot    int
		replica int
	}
	pairs := make([]pair, 0, slots*n)
	for s := range slots {
		for r, id := range replicas {
			pairs = append(pairs, pair{weight(id, topic, s), s, r})
		}
	}
	// Ties (equal 64-bit weights) are broken by replica id, then slot, so the
	// order does not depend on the order of replicas.
	sort.Slice(pairs, func(i, j int) bool {
		a, b := pairs[i], pairs[j]
		if a.w != b.w {
			return a.w > b.w
		}
		if replicas[a.replica] != replicas[b.replica] {
			return replicas[a.replica] > replicas[b.replica]
		}
		return a.slot < b.slot
	})
	share, extra := slots/n, slots%n
	held := make([]int, n)
	full := 0 // replicas holding share+1
	left := slots
	for _, p := range pairs {
		if owners[p.slot] != "" {
			continue
		}
		if h := held[p.replica]; h > share || (h == share && full == extra) {
			continue
		}
		owners[p.slot] = replicas[p.replica]
		held[p.replica]++
		if held[p.replica] == share+1 {
			full++
		}
		if left--; left == 0 {
			break
		}
	}
	return owners
}

// Owner is the replica that rendezvous hashing alone prefers for slot of
// topic among replicas; "" when there are none. The daemon shares slots with
// Assign, which keeps this preference unless the replica is full.
func Owner(replicas []string, topic string, slot int) string {
	var best string
	var bestW uint64
	for _, r := range replicas {
		if w := weight(r, topic, slot); best == "" || w > bestW || (w == bestW && r > best) {
			best, bestW = r, w
		}
	}
	return best
}

func weight(replica, topic string, slot int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(replica))
	h.Write([]byte{0})
	h.Write([]byte(topic))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(slot), 10))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], h.Sum64())
	return mix(binary.LittleEndian.Uint64(b[:]))
}

// mix is splitmix64's finaliser: FNV alone spreads similar inputs poorly.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// OwnedSlots is Forwarding.Owned when no live replica has reported the
// topics it forwards, so every one of live forwards every topic: for each
// replica of live (in that order), the slots of each topic it owns, or
// every slot when all. A topic a replica owns nothing of maps to an empty
// list, never nil. What the daemons scan, and the CLI and the console show,
// is Forwarding.Owned over the replicas' reports.
func OwnedSlots(live []string, topics []queue.Topic, all bool) []map[string][]int {
	return Forwarding{Live: live}.Owned(topics, all)
}
