package forwarder

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"time"
)

// ownershipLoop heartbeats this replica and scans the slots that rendezvous
// hashing gives it among the live replicas, until ctx ends. A replica that
// cannot renew its heartbeat for a whole TTL stops claiming: the others will
// have taken its slots over by then.
func (f *Forwarder) ownershipLoop(ctx context.Context) {
	tick := time.NewTicker(f.opt.HeartbeatInterval)
	defer tick.Stop()
	lastOK := time.Now()
	var last []string
	for {
		hctx, cancel := context.WithTimeout(ctx, f.opt.HeartbeatInterval+redisTimeout)
		live, err := f.q.Heartbeat(hctx, f.opt.KeyPrefix, f.opt.ReplicaID, f.opt.HeartbeatTTL)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			f.m.RedisErrs.WithLabelValues("heartbeat").Inc()
			if time.Since(lastOK) >= f.opt.HeartbeatTTL && len(f.ownedSlots()) > 0 {
				f.log.Error("heartbeat lost for a whole TTL; stopping every scanner", "err", err)
				f.setOwnedAsync(ctx, nil)
				last = nil
			} else {
				f.log.Warn("heartbeat failed", "err", err)
			}
		default:
			lastOK = time.Now()
			f.m.Replicas.Set(float64(len(live)))
			if !equal(live, last) {
				want := f.assign(live)
				f.log.Info("ownership changed", "replicas", len(live), "owned", len(want))
				f.setOwnedAsync(ctx, want)
				last = live
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// assign returns the slots this replica owns among live: for each topic×slot
// the replica with the highest rendezvous weight. Adding or losing a replica
// moves only that replica's share.
func (f *Forwarder) assign(live []string) map[slotKey]bool {
	want := map[slotKey]bool{}
	for ti, t := range f.opt.Topics {
		for s := 0; s < t.SlotCount(); s++ {
			if Owner(live, t.Name, s) == f.opt.ReplicaID {
				want[slotKey{ti, s}] = true
			}
		}
	}
	return want
}

// Owner is the replica that owns slot of topic among replicas (rendezvous
// hashing); "" when there are none.
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

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// leave removes this replica from the replica set so the others take its
// slots at once instead of after the TTL.
func (f *Forwarder) leave() error {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	if _, err := f.q.Leave(ctx, f.opt.KeyPrefix, f.opt.ReplicaID); err != nil {
		return err
	}
	return nil
}
