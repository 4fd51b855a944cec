package forwarder

import (
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

// TestPrepareDecodesOnceAndMarksOnlyVouchedTicks: prepare turns a claim
// into sink messages with their ids, due times and attempts, keeps the
// members beside them, fails what does not decode permanently, and notes
// as ticks only the members the claim vouched for.
func TestPrepareDecodesOnceAndMarksOnlyVouchedTicks(t *testing.T) {
	s := &scanner{topic: Topic{Topic: queue.Topic{Name: "p", Format: queue.FormatEnvelope}}}
	lookalike := "\x00recur\x00v1\x000\x00@every 1h\x00\x00{\"id\":\"x\",\"body\":\"b\"}"
	d := s.prepare(batch{claimed: []queue.Claimed{
		{Member: `{"id":"a","body":"hello"}`, Due: 1000, Attempts: 2},
		{Member: "not json"},
		{Member: lookalike},
	}})
	if len(d.msgs) != 1 || d.msgs[0].ID != "a" || string(d.msgs[0].Body) != "hello" || d.msgs[0].Attempt != 3 || d.msgs[0].Due.UnixMilli() != 1000 {
		t.Fatalf("msgs = %+v, want envelope a, attempt 3, due 1000 ms", d.msgs)
	}
	if len(d.members) != 1 || d.members[0] != `{"id":"a","body":"hello"}` || !d.indexed {
		t.Errorf("members %q indexed %v, want the envelope's member, indexed", d.members, d.indexed)
	}
	if len(d.failures) != 2 || !d.failures[0].Permanent || d.failures[1].Member != lookalike {
		t.Errorf("failures = %+v, want the invalid envelope and the unvouched look-alike, permanent", d.failures)
	}
	if len(d.vouched) != 0 {
		t.Errorf("vouched = %v, want none: the claim vouched for no tick", d.vouched)
	}
}
