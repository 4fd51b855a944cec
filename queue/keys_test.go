package queue

import "testing"

func TestFlowKeysShareTheTopicsOwnHashTag(t *testing.T) {
	t.Parallel()
	k := Topic{Name: "orders", Prefix: "dq", Slots: 8}.FlowKeys()
	if k.Bucket != "dq:{orders}:rate" || k.Limits != "dq:{orders}:limits" {
		t.Errorf("flow keys = %+v", k)
	}
	k = Topic{Name: "legacy", Key: "delayqueue"}.FlowKeys()
	if k.Bucket != "{delayqueue}:rate" || k.Limits != "{delayqueue}:limits" {
		t.Errorf("flow keys of an adopted key = %+v", k)
	}
}
