package kafka

import (
	"context"
	"fmt"
	"sync"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// Start (sinks.Starter) queues the records of msgs on the lanes of their
// partitions and returns without waiting for the brokers: done closes once
// every message has its answer, and result then returns what Publish would
// have (see sinks.Sink). The forwarder starts a slot's batch k+1 while the
// brokers still acknowledge batch k.
//
// The calls of Sink.Start share one stream, and Stream makes others. A
// stream has one lane per partition: its records go in produce requests one
// at a time, in the order their Start calls queued them, so the records of
// a Start that returned before go first. A request waits for its answer (and
// its one quick retry, see retryOnce) before the next of its partition is
// sent: Kafka gives no order between the requests of two connections, and
// without an idempotent producer a retry could land after a later request
// that succeeded. The records waiting when a request is answered go in the
// next one together (at most Config.BatchSize records and
// Config.MaxRecordBytes bytes), Start calls pipeline across partitions, and
// without a key mode each Start's records go to the partition with the
// fewest records waiting or under way in all streams (the next in turn
// among equals), so a partition whose leader does not answer gets no new
// records while another one has fewer.
//
// When a request fails for any reason but its records' content, the records
// waiting behind it on its lane are not sent: they get the same error, so
// they are not written before the failed ones are published again. Nothing
// is sent for a Start whose ctx ended or after Close; the requests under way
// are answered (each within Config.WriteTimeout) and Close waits for them.
func (s *Sink) Start(ctx context.Context, msgs []sinks.Message) (done <-chan struct{}, result func() error) {
	return s.start(&s.lanes.main, ctx, msgs)
}

// Stream (sinks.Streamer) is a Starter whose Start calls keep their order
// among themselves only: its records queue on lanes of its own, so a
// partition whose request does not answer holds only the stream's later
// records for that partition, and the streams' requests go side by side on
// connections of their own (kafka-go's Transport sends one request per
// connection at a time). The forwarder gives each slot a stream.
func (s *Sink) Stream() sinks.Starter { return &stream{s: s} }

// stream is a set of lanes, one per partition, whose Start calls keep their
// order. Its lanes are guarded by the sink's lanes.mu.
type stream struct {
	s  *Sink
	by map[int]*lane
}

// Start queues msgs on the stream's lanes; see Sink.Start.
func (sm *stream) Start(ctx context.Context, msgs []sinks.Message) (done <-chan struct{}, result func() error) {
	return sm.s.start(sm, ctx, msgs)
}

func (s *Sink) start(sm *stream, ctx context.Context, msgs []sinks.Message) (done <-chan struct{}, result func() error) {
	if !s.enter() {
		return answered(sinks.ErrClosed)
	}
	defer s.inflight.Done()
	if err := ctx.Err(); err != nil {
		return answered(fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, err))
	}
	if len(msgs) == 0 {
		return answered(nil)
	}
	records, sent, errs := s.records(msgs)
	st := &started{ctx: ctx, msgs: msgs, records: records, sent: sent, errs: errs, left: len(records), done: make(chan struct{})}
	if len(records) == 0 {
		close(st.done)
		return st.done, st.result
	}
	parts, err := s.partitions(ctx)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, ctx.Err())
		} else {
			err = classify(s.cfg.Topic, err)
		}
		all := make([]int, len(records))
		for j := range all {
			all[j] = j
		}
		st.answer(all, err)
		return st.done, st.result
	}
	s.queue(sm, st, parts)
	return st.done, st.result
}

// answered is a Start result known at once.
func answered(err error) (<-chan struct{}, func() error) {
	c := make(chan struct{})
	close(c)
	return c, func() error { return err }
}

// started is one Start call waiting for its answers.
type started struct {
	ctx     context.Context
	msgs    []sinks.Message
	records []kafkago.Message
	sent    []int // records[j] is msgs[sent[j]]

	mu   sync.Mutex
	errs []error // one per message
	left int     // records without an answer
	done chan struct{}
}

// answer records err (nil: acknowledged) as the answer of the records idx.
func (st *started) answer(idx []int, err error) {
	if len(idx) == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, j := range idx {
		st.errs[st.sent[j]] = err
	}
	st.left -= len(idx)
	if st.left == 0 {
		close(st.done)
	}
}

// result is nil when every message was acknowledged, the error they share
// when all failed for one reason, and a *sinks.BatchError otherwise.
func (st *started) result() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	failed, shared := false, st.errs[0]
	for _, err := range st.errs {
		failed = failed || err != nil
		if err != shared { //nolint:errorlint // identity: the very same error value
			shared = nil
		}
	}
	switch {
	case !failed:
		return nil
	case shared != nil:
		return shared
	}
	return &sinks.BatchError{Errs: append([]error(nil), st.errs...)}
}

// lane holds the records Start queued for one partition until its sender
// (sendLane) puts them in produce requests, one request at a time.
type lane struct {
	p       int
	waiting []*piece
	sending bool // sendLane runs for this lane
	load    int  // records waiting or in the request under way
}

// piece is records of one Start for one partition, in order.
type piece struct {
	st  *started
	idx []int // indexes into st.records
}

// lanes is what the streams of a sink share.
type lanes struct {
	mu sync.Mutex
	// load is the records waiting or under way by partition, over all
	// streams.
	load map[int]int
	turn int    // where the search for the least loaded partition starts
	main stream // Sink.Start's
}

// lane is sm's lane of partition p, made on first use. The caller holds
// s.lanes.mu.
func (sm *stream) lane(p int) *lane {
	if sm.by == nil {
		sm.by = make(map[int]*lane)
	}
	l, ok := sm.by[p]
	if !ok {
		l = &lane{p: p}
		sm.by[p] = l
	}
	return l
}

// loaded adds n records to the load of l (n < 0: takes them off). The
// caller holds s.lanes.mu.
func (s *Sink) loaded(l *lane, n int) {
	if s.lanes.load == nil {
		s.lanes.load = make(map[int]int)
	}
	l.load += n
	s.lanes.load[l.p] += n
}

// queue puts the records of st on sm's lanes of their partitions and starts
// the sender of each idle lane.
func (s *Sink) queue(sm *stream, st *started, parts []int) {
	s.lanes.mu.Lock()
	defer s.lanes.mu.Unlock()
	for p, idx := range s.assignStart(st.records, parts) {
		l := sm.lane(p)
		l.waiting = append(l.waiting, &piece{st: st, idx: idx})
		s.loaded(l, len(idx))
		if !l.sending {
			l.sending = true
			s.writes.Add(1)
			go s.sendLane(l)
		}
	}
}

// assignStart maps each partition to the indexes of its records, in order:
// with a key mode by the balancer, without one all of them to the partition
// with the fewest records waiting or under way (in every stream), the next
// in turn among equals. The caller holds s.lanes.mu.
func (s *Sink) assignStart(records []kafkago.Message, parts []int) map[int][]int {
	if s.cfg.KeyMode != KeyNone {
		return s.assign(records, parts)
	}
	best, at := -1, 0
	for k := range parts {
		i := (s.lanes.turn + k) % len(parts)
		if best < 0 || s.lanes.load[parts[i]] < s.lanes.load[best] {
			best, at = parts[i], i
		}
	}
	s.lanes.turn = at + 1
	idx := make([]int, len(records))
	for j := range idx {
		idx[j] = j
	}
	return map[int][]int{best: idx}
}

// sendLane sends the records waiting on l, one produce request at a time,
// until none waits.
func (s *Sink) sendLane(l *lane) {
	defer s.writes.Done()
	for {
		req, n := s.take(l)
		if n == 0 {
			return
		}
		err := s.sendRequest(l.p, req)
		s.lanes.mu.Lock()
		s.loaded(l, -n)
		if err != nil {
			// The records queued behind a failed request are not sent
			// before the failed ones are published again.
			s.failWaiting(l, err)
		}
		s.lanes.mu.Unlock()
	}
}

// take removes the records of l's next produce request from its first
// waiting pieces: at most Config.BatchSize records and, as an uncompressed
// record batch, Config.MaxRecordBytes bytes (but at least one record). The
// pieces of a Start whose ctx ended are answered with its error instead,
// and after Close every waiting piece with sinks.ErrClosed. n is how many
// records req holds; 0 when none waits, and l's sender ends.
func (s *Sink) take(l *lane) (req []piece, n int) {
	s.lanes.mu.Lock()
	defer s.lanes.mu.Unlock()
	if s.closing.Err() != nil {
		s.failWaiting(l, fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, sinks.ErrClosed))
	}
	size := recordBatchOverhead
	for len(l.waiting) > 0 && n < s.cfg.BatchSize {
		pc := l.waiting[0]
		if err := pc.st.ctx.Err(); err != nil {
			l.pop()
			s.loaded(l, -len(pc.idx))
			pc.st.answer(pc.idx, fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, err))
			continue
		}
		k := 0
		for ; k < len(pc.idx) && n < s.cfg.BatchSize; k++ {
			rs := batchedRecordSize(&pc.st.records[pc.idx[k]])
			if n > 0 && size+rs > s.cfg.MaxRecordBytes {
				break
			}
			size += rs
			n++
		}
		if k == 0 {
			break
		}
		req = append(req, piece{st: pc.st, idx: pc.idx[:k]})
		if k < len(pc.idx) {
			pc.idx = pc.idx[k:]
			break // the request is full
		}
		l.pop()
	}
	if n == 0 {
		l.sending = false
	}
	return req, n
}

func (l *lane) pop() {
	l.waiting[0] = nil
	l.waiting = l.waiting[1:]
}

// failWaiting answers every record waiting on l with err. The caller holds
// s.lanes.mu.
func (s *Sink) failWaiting(l *lane, err error) {
	for _, pc := range l.waiting {
		s.loaded(l, -len(pc.idx))
		pc.st.answer(pc.idx, err)
	}
	clear(l.waiting)
	l.waiting = l.waiting[:0]
}

// sendRequest writes the records of req to partition p in one produce
// request and answers them. A request the broker refuses for its content is
// sent again a record at a time, to fail only the record at fault. It
// returns the error of a request that failed for any other reason (its
// records are answered with it), nil otherwise.
func (s *Sink) sendRequest(p int, req []piece) error {
	// Not the caller's ctx: kafka-go cannot take back a request on the
	// wire, and Close waits for it; Config.WriteTimeout bounds it.
	err := s.produce(context.Background(), p, func() kafkago.RecordReader { return piecesReader(req) })
	switch {
	case err == nil:
		for _, pc := range req {
			pc.st.answer(pc.idx, nil)
		}
		return nil
	case recordRejected(err) && (len(req) > 1 || len(req[0].idx) > 1):
		s.log.Warn("kafka refused a batch for its content; resending its records one by one", "partition", p)
		return s.sendAlone(p, req)
	case recordRejected(err):
		pc := req[0]
		pc.st.answer(pc.idx, sinks.Permanent(fmt.Errorf("kafka topic %s refused message %s: %w",
			s.cfg.Topic, pc.st.msgs[pc.st.sent[pc.idx[0]]].ID, err)))
		return nil
	}
	err = classify(s.cfg.Topic, err)
	for _, pc := range req {
		pc.st.answer(pc.idx, err)
	}
	return err
}

// sendAlone sends the records of req one request each, in order, like
// sendRequest. After a request fails for a reason other than its record's
// content, the rest get its error unsent, and sendAlone returns it.
func (s *Sink) sendAlone(p int, req []piece) error {
	for n, pc := range req {
		for k, j := range pc.idx {
			err := s.sendRequest(p, []piece{{st: pc.st, idx: []int{j}}})
			if err == nil {
				continue
			}
			pc.st.answer(pc.idx[k+1:], err)
			for _, rest := range req[n+1:] {
				rest.st.answer(rest.idx, err)
			}
			return err
		}
	}
	return nil
}

// piecesReader reads the records of req in order. A reader is read once:
// every attempt needs its own.
func piecesReader(req []piece) kafkago.RecordReader {
	var n int
	for _, pc := range req {
		n += len(pc.idx)
	}
	rs := make([]kafkago.Record, 0, n)
	for _, pc := range req {
		for _, j := range pc.idx {
			m := &pc.st.records[j]
			rs = append(rs, kafkago.Record{
				Time:    m.Time,
				Key:     kafkago.NewBytes(m.Key),
				Value:   kafkago.NewBytes(m.Value),
				Headers: m.Headers,
			})
		}
	}
	return kafkago.NewRecordReader(rs...)
}
