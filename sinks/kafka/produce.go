package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// retryBackoff is the pause before the one quick retry of a produce request
// (see retryOnce).
const retryBackoff = 20 * time.Millisecond

// writeRecords writes records (records[j] is msgs[sent[j]]), one goroutine
// per partition, and sets errs[sent[j]] for each record that failed. It
// returns an error instead when the wait was interrupted (the caller's ctx
// ended or the sink closed) before every record had its answer, or when
// nothing could be sent and every message of msgs was in records.
func (s *Sink) writeRecords(ctx, wctx context.Context, msgs []sinks.Message, records []kafkago.Message, sent []int, errs []error) error {
	parts, err := s.partitions(wctx)
	if err != nil {
		if ierr := s.interrupted(ctx, wctx); ierr != nil {
			return ierr
		}
		if len(records) == len(msgs) {
			return classify(s.cfg.Topic, err)
		}
		for _, i := range sent {
			errs[i] = classify(s.cfg.Topic, err)
		}
		return nil
	}

	// rerrs[j] is records[j]'s result; each goroutine writes only the
	// entries of its partition's records.
	rerrs := make([]error, len(records))
	// The requests outlive a caller that stops waiting (kafka-go cannot take
	// back a request on the wire; its connection is busy until the answer
	// or the deadline either way), so that Close can wait for them. They
	// keep the caller's deadline.
	rctx, cancel := detach(ctx)
	var wg sync.WaitGroup
	for p, idx := range s.assign(records, parts) {
		wg.Add(1)
		s.writes.Add(1)
		go func() {
			defer s.writes.Done()
			defer wg.Done()
			s.writePartition(rctx, wctx, p, records, idx, msgs, sent, rerrs)
		}()
	}
	all := make(chan struct{})
	go func() {
		wg.Wait()
		cancel()
		close(all)
	}()
	select {
	case <-all:
	case <-wctx.Done():
		// The requests under way end within WriteTimeout; Close waits for
		// them. Their records may be written.
		return s.interrupted(ctx, wctx)
	}
	failed := false
	for j, e := range rerrs {
		errs[sent[j]] = e
		failed = failed || e != nil
	}
	if failed {
		return s.interrupted(ctx, wctx)
	}
	return nil
}

// detach is ctx without its cancellation but with its deadline.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return context.WithCancel(d)
}

// partitions lists the partitions of the topic, from the transport's
// metadata cache (refreshed every MetadataTTL).
func (s *Sink) partitions(ctx context.Context) ([]int, error) {
	res, err := s.client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{s.cfg.Topic}})
	if err != nil {
		return nil, err
	}
	for _, t := range res.Topics {
		if t.Name != s.cfg.Topic {
			continue
		}
		if t.Error != nil {
			return nil, t.Error
		}
		if len(t.Partitions) == 0 {
			break
		}
		ids := make([]int, len(t.Partitions))
		for i, p := range t.Partitions {
			ids[i] = p.ID
		}
		slices.Sort(ids)
		return ids, nil
	}
	return nil, kafkago.UnknownTopicOrPartition
}

// assign maps each partition to the indexes of its records, in order.
// Records without a key all go to one partition, the next in turn for each
// Publish (like the Java client's sticky partitioner): one produce request
// per Publish instead of one per partition, and a partition that does not
// answer holds only the Publish calls that went to it. A keyed record goes
// to the partition the Java client's default partitioner picks for its key
// (murmur2; the empty key is a key), so consumers that rely on per-key
// order keep it.
func (s *Sink) assign(records []kafkago.Message, parts []int) map[int][]int {
	out := make(map[int][]int, 1)
	turn := -1
	for j := range records {
		var p int
		switch {
		case records[j].Key != nil:
			p = s.murmur.Balance(records[j], parts...)
		case turn >= 0:
			p = turn
		default:
			turn = s.turns.Balance(records[j], parts...)
			p = turn
		}
		out[p] = append(out[p], j)
	}
	return out
}

// writePartition writes the records idx of partition p in order, in
// requests of at most Config.BatchSize records and Config.MaxRecordBytes
// bytes, and sets rerrs for them. After a request fails for any reason but
// its records' content, the records after it are not sent: they get the
// same error, so the partition's order holds when they are published again.
// Nothing more is sent once wctx ended.
func (s *Sink) writePartition(ctx, wctx context.Context, p int, records []kafkago.Message, idx []int, msgs []sinks.Message, sent []int, rerrs []error) {
	for len(idx) > 0 {
		n := s.chunk(records, idx)
		chunk := idx[:n]
		idx = idx[n:]
		if err := wctx.Err(); err != nil {
			setAll(rerrs, chunk, err)
			setAll(rerrs, idx, err)
			return
		}
		err := s.produce(ctx, p, records, chunk)
		switch {
		case err == nil:
		case recordRejected(err):
			if n == 1 {
				j := chunk[0]
				rerrs[j] = sinks.Permanent(fmt.Errorf("kafka topic %s refused message %s: %w", s.cfg.Topic, msgs[sent[j]].ID, err))
				continue
			}
			s.log.Warn("kafka refused a batch for its content; resending its records one by one", "partition", p, "count", n)
			for _, j := range chunk {
				s.writePartition(ctx, wctx, p, records, []int{j}, msgs, sent, rerrs)
			}
		default:
			err = classify(s.cfg.Topic, err)
			setAll(rerrs, chunk, err)
			setAll(rerrs, idx, err)
			return
		}
	}
}

func setAll(errs []error, idx []int, err error) {
	for _, j := range idx {
		errs[j] = err
	}
}

// chunk is how many of the records idx (at least one) go in the next
// produce request: at most Config.BatchSize, and no more bytes than
// Config.MaxRecordBytes as an uncompressed record batch.
func (s *Sink) chunk(records []kafkago.Message, idx []int) int {
	size := recordBatchOverhead
	for n, j := range idx {
		if n == s.cfg.BatchSize {
			return n
		}
		size += batchedRecordSize(&records[j])
		if n > 0 && size > s.cfg.MaxRecordBytes {
			return n
		}
	}
	return len(idx)
}

// produce sends the records idx to partition p with acks=all and waits for
// the answer, within Config.WriteTimeout and ctx. An answer that may be
// gone on a retry is retried once (see retryOnce).
func (s *Sink) produce(ctx context.Context, p int, records []kafkago.Message, idx []int) error {
	for attempt := 1; ; attempt++ {
		res, err := s.client.Produce(ctx, &kafkago.ProduceRequest{
			Topic:        s.cfg.Topic,
			Partition:    p,
			RequiredAcks: kafkago.RequireAll,
			Compression:  s.codec,
			Records:      recordReader(records, idx),
		})
		if err == nil && res != nil {
			err = res.Error
		}
		if err == nil {
			s.ping.answered()
		}
		if err == nil || attempt == 2 || ctx.Err() != nil || !retryOnce(err) {
			return err
		}
		t := time.NewTimer(retryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// retryOnce reports whether a failed produce request is worth one quick
// retry: the broker called the error temporary (a leader moving, not
// enough replicas for a moment), or a pooled connection broke (the broker
// closed it while idle). A request that timed out is not retried: the
// broker is not answering, and the forwarder waits for Ping before it
// publishes again.
func retryOnce(err error) bool {
	var kerr kafkago.Error
	if errors.As(err, &kerr) {
		return kerr.Temporary() && !recordRejected(err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// recordReader reads the records idx of records. A reader is read once:
// every attempt needs its own.
func recordReader(records []kafkago.Message, idx []int) kafkago.RecordReader {
	rs := make([]kafkago.Record, len(idx))
	for n, j := range idx {
		m := &records[j]
		rs[n] = kafkago.Record{
			Time:    m.Time,
			Key:     kafkago.NewBytes(m.Key),
			Value:   kafkago.NewBytes(m.Value),
			Headers: m.Headers,
		}
	}
	return kafkago.NewRecordReader(rs...)
}

// interrupted is the error of a Publish whose wait ended early, or nil: the
// caller's ctx ended or the sink closed. The records may have been written.
// It is checked before a write error is classified, so that the
// DeadlineExceeded of the caller is not taken for kafka-go's own.
func (s *Sink) interrupted(ctx, wctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, err)
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// The connection's deadline, which is ctx's, fired before ctx's
		// own timer did.
		return fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, context.DeadlineExceeded)
	}
	if errors.Is(context.Cause(wctx), sinks.ErrClosed) {
		return fmt.Errorf("publish to kafka topic %s: %w", s.cfg.Topic, sinks.ErrClosed)
	}
	return nil
}
