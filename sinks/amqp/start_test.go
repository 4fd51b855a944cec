package amqp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
)

// numbered is n messages "<prefix>-<i>" with ids of their own.
func numbered(prefix string, n int) []sinks.Message {
	msgs := make([]sinks.Message, n)
	for i := range msgs {
		body := fmt.Sprintf("%s-%03d", prefix, i)
		msgs[i] = sinks.Message{ID: body, Topic: "t", Body: []byte(body), Due: time.UnixMilli(1), Attempt: 1}
	}
	return msgs
}

func TestStartedBatchesArriveInStartOrderEachWithItsOwnAnswer(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	s := newSink(t, testURL(), d, 0)
	c := d.consume(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Five batches started back to back, the middle one unroutable: none
	// waits for the confirms of the one before.
	type started struct {
		done   <-chan struct{}
		result func() error
	}
	var all []started
	var want []string
	for b := range 5 {
		msgs := numbered(fmt.Sprintf("b%d", b), 100)
		if b == 2 {
			for i := range msgs {
				msgs[i].RoutingKey = "nowhere"
			}
		} else {
			for _, m := range msgs {
				want = append(want, string(m.Body))
			}
		}
		done, result := s.Start(ctx, msgs)
		all = append(all, started{done, result})
	}
	for b, st := range all {
		select {
		case <-st.done:
		case <-ctx.Done():
			t.Fatalf("batch %d: no answer within a minute", b)
		}
		err := st.result()
		if b == 2 {
			for i, e := range batchErrs(t, err, 100) {
				brokerAnswer(t, i, e, "unroutable")
			}
			continue
		}
		if err != nil {
			t.Errorf("batch %d: %v", b, err)
		}
	}
	got := c.next(t, len(want), 30*time.Second)
	for i, dl := range got {
		if string(dl.Body) != want[i] {
			t.Fatalf("delivery %d is %s, want %s (start order)", i, dl.Body, want[i])
		}
	}
	c.quiet(t, 200*time.Millisecond)
}

func TestStartAfterCloseAnswersAtOnce(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	s := newSink(t, testURL(), d, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	done, result := s.Start(context.Background(), numbered("m", 1))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Start after Close did not answer")
	}
	if err := result(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}
