package chaos

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupWatch sees, from inside the broker, what the consumers of one topic
// fetch and commit: a fetch from offset o says every record of the
// partition before o was handed out, a commit says which member stood
// where. It only looks, except when a kill is armed (killOn): then it kills
// a member's process at a moment only the broker sees.
type groupWatch struct {
	topic string
	k     *kafkaBroker

	mu      sync.Mutex
	fetches []fetchEvent
	last    map[int32]commitEvent // the last commit the broker applied, by partition
	read    map[int32]int64       // the furthest fetch, by partition
	// furthest is each member's furthest applied commit, by partition.
	furthest map[string]map[int32]int64
	armed    []*armedKill
}

type fetchEvent struct {
	at        time.Time
	partition int32
	offset    int64
}

// commitEvent is a partition's commit: by whom, up to where.
type commitEvent struct {
	member string
	offset int64
}

// span is the records [from, to) of a partition.
type span struct {
	partition int32
	from, to  int64
}

func (s span) String() string { return fmt.Sprintf("%d/[%d,%d)", s.partition, s.from, s.to) }

// killMoment is when, as the broker sees a member, killOn kills it.
type killMoment int

const (
	// onRead: the member fetches past its last commit, so it holds records
	// it read and did not commit (mostly not in Redis yet: the intake waits
	// a few milliseconds for more before it writes a batch, but a busy
	// machine can delay the fetch until the batch is written).
	onRead killMoment = iota
	// beforeCommit: the member asks to commit; it dies before the broker
	// applies the commit, which goes with its connection, as if it had
	// died a moment before sending it. The records of that commit are in
	// Redis and not committed: the group reads them again.
	beforeCommit
	// onCommit: the member asks to commit and dies as the broker applies
	// it. The records of that commit must be in Redis already.
	onCommit
)

func (m killMoment) String() string {
	return [...]string{"on a fetch past its commit", "before its commit", "on its commit"}[m]
}

// armedKill is a kill waiting for its moment.
type armedKill struct {
	clientID string
	moment   killMoment
	after    time.Time
	kill     func()
	done     chan killEvent
}

// killEvent is a kill as the broker saw it.
type killEvent struct {
	clientID string
	moment   killMoment
	at       time.Time
	// records are, killed onRead, those it held past its last commit;
	// otherwise those of the commit it died on.
	records span
}

// errKilled closes the connection of a commit that beforeCommit dropped.
var errKilled = errors.New("the member was killed before this commit")

func newGroupWatch(k *kafkaBroker, topic string) *groupWatch {
	w := &groupWatch{topic: topic, k: k, last: map[int32]commitEvent{}, read: map[int32]int64{}, furthest: map[string]map[int32]int64{}}
	k.cluster.ControlKey(kmsg.Fetch.Int16(), w.onFetch)
	k.cluster.ControlKey(kmsg.OffsetCommit.Int16(), w.onCommit)
	return w
}

// killOn arms a kill: kill runs (on the broker's loop, which waits for it)
// at the first moment after after that the member whose client id is
// clientID reaches; the event comes on the returned channel.
func (w *groupWatch) killOn(clientID string, moment killMoment, after time.Time, kill func()) <-chan killEvent {
	a := &armedKill{clientID: clientID, moment: moment, after: after, kill: kill, done: make(chan killEvent, 1)}
	w.mu.Lock()
	w.armed = append(w.armed, a)
	w.mu.Unlock()
	return a.done
}

// take removes and returns the armed kill that fires for a request of
// member (by its last commit's member for a fetch) at moment, if any.
func (w *groupWatch) take(member string, moments ...killMoment) *armedKill {
	now := time.Now()
	for i, a := range w.armed {
		if strings.HasPrefix(member, a.clientID+"-") && now.After(a.after) && slices.Contains(moments, a.moment) {
			w.armed = append(w.armed[:i], w.armed[i+1:]...)
			return a
		}
	}
	return nil
}

func (w *groupWatch) onFetch(req kmsg.Request) (kmsg.Response, error, bool) {
	now := time.Now()
	var fire *armedKill
	var held span
	w.mu.Lock()
	for _, ft := range req.(*kmsg.FetchRequest).Topics {
		if ft.Topic != w.topic {
			continue
		}
		for _, p := range ft.Partitions {
			w.fetches = append(w.fetches, fetchEvent{at: now, partition: p.Partition, offset: p.FetchOffset})
			w.read[p.Partition] = max(w.read[p.Partition], p.FetchOffset)
			if c, ok := w.last[p.Partition]; ok && fire == nil && p.FetchOffset > c.offset {
				if fire = w.take(c.member, onRead); fire != nil {
					held = span{partition: p.Partition, from: c.offset, to: p.FetchOffset}
				}
			}
		}
	}
	w.mu.Unlock()
	if fire != nil {
		fire.kill()
		fire.done <- killEvent{clientID: fire.clientID, moment: fire.moment, at: time.Now(), records: held}
	}
	return nil, nil, false
}

func (w *groupWatch) onCommit(req kmsg.Request) (kmsg.Response, error, bool) {
	c := req.(*kmsg.OffsetCommitRequest)
	var fire *armedKill
	var commit span
	w.mu.Lock()
	for _, ct := range c.Topics {
		if ct.Topic != w.topic || len(ct.Partitions) == 0 {
			continue
		}
		if fire == nil {
			fire = w.take(c.MemberID, beforeCommit, onCommit)
			p := ct.Partitions[0]
			commit = span{partition: p.Partition, from: w.last[p.Partition].offset, to: p.Offset}
		}
		if fire != nil && fire.moment == beforeCommit {
			continue // never applied
		}
		for _, p := range ct.Partitions {
			w.last[p.Partition] = commitEvent{member: c.MemberID, offset: p.Offset}
			if w.furthest[c.MemberID] == nil {
				w.furthest[c.MemberID] = map[int32]int64{}
			}
			w.furthest[c.MemberID][p.Partition] = max(w.furthest[c.MemberID][p.Partition], p.Offset)
		}
	}
	w.mu.Unlock()
	if fire == nil {
		return nil, nil, false
	}
	fire.kill()
	fire.done <- killEvent{clientID: fire.clientID, moment: fire.moment, at: time.Now(), records: commit}
	if fire.moment == beforeCommit {
		w.k.cluster.KeepControl() // handling the request would drop this function
		return nil, errKilled, true
	}
	return nil, nil, false
}

// uncommitted is what the member whose client id is clientID read and did
// not commit, for every partition it was the last to commit: from its last
// commit to the furthest fetch of that partition. Called after the member
// died, before the group gave its partitions to another, it is what the
// member held when it died.
func (w *groupWatch) uncommitted(clientID string) []span {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []span
	for p, c := range w.last {
		if strings.HasPrefix(c.member, clientID+"-") && w.read[p] > c.offset {
			out = append(out, span{partition: p, from: c.offset, to: w.read[p]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].partition < out[j].partition })
	return out
}

// committedBy is the furthest offset of partition that a member whose
// client id is clientID committed, at any time (0: none). A member killed
// on a fetch may have sent a commit just before: the broker applies it
// after the kill, and the records below it are committed, not held.
func (w *groupWatch) committedBy(clientID string, partition int32) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var off int64
	for member, parts := range w.furthest {
		if strings.HasPrefix(member, clientID+"-") {
			off = max(off, parts[partition])
		}
	}
	return off
}

// readAgain is every record the group fetched a second time (a fetch from
// below where the partition had been read already), by partition and
// offset.
func (w *groupWatch) readAgain() map[int32]map[int64]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	again := map[int32]map[int64]bool{}
	read := map[int32]int64{}
	for _, f := range w.fetches {
		if f.offset < read[f.partition] {
			if again[f.partition] == nil {
				again[f.partition] = map[int64]bool{}
			}
			for o := f.offset; o < read[f.partition]; o++ {
				again[f.partition][o] = true
			}
		}
		read[f.partition] = max(read[f.partition], f.offset)
	}
	return again
}

// fetchedAfter is when partition was first fetched after since (zero if
// never).
func (w *groupWatch) fetchedAfter(partition int32, since time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.fetches {
		if f.partition == partition && f.at.After(since) {
			return f.at
		}
	}
	return time.Time{}
}
