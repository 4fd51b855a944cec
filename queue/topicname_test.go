package queue

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckTopicName(t *testing.T) {
	for _, ok := range []string{"orders", "Order-Events_v2.1", "a", strings.Repeat("x", 100), "a..b"} {
		if err := CheckTopicName(ok); err != nil {
			t.Errorf("CheckTopicName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", "a?c#d", "%2e%2e", "..", ".", "<script>", "a b", "a{b}", "é", "a:b", strings.Repeat("x", 101)} {
		if err := CheckTopicName(bad); !errors.Is(err, ErrBadTopicName) {
			t.Errorf("CheckTopicName(%q) = %v, want ErrBadTopicName", bad, err)
		}
	}
}

func TestRegisterRefusesABadTopicNameAndWritesNothing(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	prefix := f.tp.Prefix
	ls := layouts(prefix)
	bad := LayoutOf(Topic{Name: "a/b", Prefix: prefix})
	if _, err := f.q.Register(f.ctx, prefix, "a", append(ls, bad)); !errors.Is(err, ErrBadTopicName) {
		t.Fatalf("Register(a/b) = %v, want ErrBadTopicName", err)
	}
	if n := f.rdb.HLen(f.ctx, TopicsKey(prefix)).Val(); n != 0 {
		t.Errorf("registry holds %d topics after a refused Register, want 0", n)
	}
}
