package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// gateRefresh is how long the replicas counted by INFO replication are
// trusted before an acceptance reads them again.
const gateRefresh = time.Second

// ReplicaMaxLag is the longest a replica may go without acknowledging the
// master's stream (its lag in INFO replication, in seconds; replicas
// acknowledge every second) and still count as connected for acceptance.
const ReplicaMaxLag = 3

// replicaGate remembers how many replicas the master last said were
// connected, so that acceptance stops, rather than writes what it cannot
// confirm, while too few are. A WAIT that returned fewer than asked closes
// it too, until the next read of INFO.
type replicaGate struct {
	mu        sync.Mutex
	checked   time.Time
	connected int
	aofOff    bool  // the last read of INFO persistence said aof_enabled:0
	err       error // the last read's failure
}

// Acceptance is the state of q's durable acceptance, for /readyz and
// check.
type Acceptance struct {
	Want      int       // Durability.Replicas
	Connected int       // replicas counted at Checked (lag ≤ ReplicaMaxLag)
	AOFOff    bool      // Durability.AOF and the master's appendonly is off
	Checked   time.Time // zero: never read
	Err       error     // why acceptance stops; nil: it goes on
}

// Acceptance reads the replicas connected to the master now (INFO
// replication) and, when q waits for the AOF fsync, whether its appendonly
// is on (INFO persistence), and says whether acceptance goes on. A Queue
// that waits for nothing always accepts.
func (q *Queue) Acceptance(ctx context.Context) Acceptance {
	if !q.waiting() {
		return Acceptance{}
	}
	q.gate.refresh(ctx, q.rdb, 0, q.durable.AOF)
	return q.gate.state(q.durable)
}

// admit refuses a write while fewer replicas are connected than q waits
// for, or while the master's appendonly is off and q waits for its fsync,
// reading INFO at most once per gateRefresh. On Redis Cluster the replicas
// are those of each node, and each WAIT (and WAITAOF) says.
func (q *Queue) admit(ctx context.Context) error {
	if !q.waiting() {
		return nil
	}
	if _, cluster := q.rdb.(*redis.ClusterClient); cluster {
		return nil
	}
	q.gate.refresh(ctx, q.rdb, gateRefresh, q.durable.AOF)
	return q.gate.state(q.durable).Err
}

func (g *replicaGate) refresh(ctx context.Context, rdb redis.UniversalClient, maxAge time.Duration, aof bool) {
	g.mu.Lock()
	fresh := !g.checked.IsZero() && time.Since(g.checked) < maxAge
	g.mu.Unlock()
	if fresh {
		return
	}
	sections := []string{"replication"}
	if aof { // WAITAOF needs Redis 7.0's INFO of several sections anyway
		sections = append(sections, "persistence")
	}
	info, err := rdb.Info(ctx, sections...).Result()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checked, g.err = time.Now(), nil
	if err != nil {
		g.err = fmt.Errorf("read INFO %s: %w", strings.Join(sections, " "), err)
		return
	}
	g.connected = CountReplicas(info, ReplicaMaxLag)
	g.aofOff = aof && infoField(info, "aof_enabled") == "0"
}

// learn takes what a WAIT found: fewer replicas than asked close the gate
// until the next read of INFO.
func (g *replicaGate) learn(got, want int) {
	if got >= want {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if got < g.connected {
		g.connected = got
	}
}

func (g *replicaGate) state(d Durability) Acceptance {
	want := d.Replicas
	g.mu.Lock()
	defer g.mu.Unlock()
	a := Acceptance{Want: want, Connected: g.connected, Checked: g.checked, AOFOff: d.AOF && g.aofOff}
	switch {
	case g.err != nil:
		// Redis unreachable: the write fails on its own; do not hide why.
	case a.AOFOff:
		a.Err = ErrAOFOff
	case g.connected < want:
		a.Err = fmt.Errorf("%w: %d connected within %ds of lag, %d asked for", ErrTooFewReplicas, g.connected, ReplicaMaxLag, want)
	}
	return a
}

// ReplicaLink is one replica as an INFO replication reply of its master
// shows it (a slaveN line).
type ReplicaLink struct {
	IP, Port, State, Lag string // Lag: seconds since it last acknowledged
}

// ReplicaLinks lists the replicas of an INFO replication reply.
func ReplicaLinks(info string) []ReplicaLink {
	var out []ReplicaLink
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "slave") || strings.Contains(name, "_") {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			f[k] = val
		}
		out = append(out, ReplicaLink{IP: f["ip"], Port: f["port"], State: f["state"], Lag: f["lag"]})
	}
	return out
}

// CountReplicas counts the replicas of an INFO replication reply that are
// online and acknowledged the master within maxLag seconds.
func CountReplicas(info string, maxLag int) int {
	n := 0
	for _, r := range ReplicaLinks(info) {
		lag, err := strconv.Atoi(r.Lag)
		if r.State == "online" && err == nil && lag <= maxLag {
			n++
		}
	}
	return n
}

// infoField is the value of name in an INFO reply, "" when absent.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == name {
			return v
		}
	}
	return ""
}
