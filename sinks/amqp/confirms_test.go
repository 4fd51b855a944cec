package amqp

import (
	"errors"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// track registers ids as tags 1..n of a fresh tracker, all to exchange "ex".
func track(ids ...identity) (*tracker, *batch) {
	tr := newTracker(DefaultMaxUnconfirmed)
	b := newBatch(len(ids))
	for i, id := range ids {
		tr.add(uint64(i+1), &pending{b: b, i: i, id: id})
	}
	return tr, b
}

func ack(tag uint64) amqp091.Confirmation  { return amqp091.Confirmation{DeliveryTag: tag, Ack: true} }
func nack(tag uint64) amqp091.Confirmation { return amqp091.Confirmation{DeliveryTag: tag, Ack: false} }

func ret(id identity) amqp091.Return {
	return amqp091.Return{ReplyCode: 312, ReplyText: "NO_ROUTE", MessageId: id.messageID, Exchange: id.exchange, RoutingKey: id.key}
}

func errsOf(t *testing.T, b *batch) []error {
	t.Helper()
	select {
	case <-b.done:
	default:
		t.Fatalf("batch not settled")
	}
	return sinks.Results(b.result(), len(b.errs))
}

func TestReturnBeforeAckFailsOnlyTheReturnedMessage(t *testing.T) {
	a := identity{"a", "ex", "rk"}
	lost := identity{"a", "ex", "nowhere"} // same id, other key
	tr, b := track(a, lost, a, lost)

	// RabbitMQ's order: the return of an unroutable message, then its ack.
	tr.confirmed(ack(1))
	tr.returned(ret(lost))
	tr.confirmed(ack(2))
	tr.confirmed(ack(3))
	tr.returned(ret(lost))
	tr.confirmed(ack(4))

	errs := errsOf(t, b)
	for i, want := range []bool{false, true, false, true} {
		if got := errs[i] != nil; got != want {
			t.Errorf("message %d: err %v, want failed=%v", i, errs[i], want)
		}
	}
	if !strings.Contains(errs[1].Error(), "unroutable: 312 NO_ROUTE") || errors.Is(errs[1], sinks.ErrNotConnected) {
		t.Errorf("returned message: %v", errs[1])
	}
}

func TestReturnMarksTheEarliestUnreturnedMessageOfItsIdentity(t *testing.T) {
	x := identity{"x", "ex", "nowhere"}
	tr, b := track(x, x, x)
	tr.returned(ret(x)) // for tag 1
	tr.returned(ret(x)) // for tag 2, which is not yet acked
	tr.confirmed(ack(1))
	tr.confirmed(ack(2))
	tr.confirmed(ack(3)) // tag 3 had no return
	errs := errsOf(t, b)
	if errs[0] == nil || errs[1] == nil || errs[2] != nil {
		t.Fatalf("results %v, want two failures then a success", errs)
	}
}

func TestNackIsTheBrokersAnswer(t *testing.T) {
	tr, b := track(identity{"a", "ex", "rk"}, identity{"b", "ex", "rk"})
	tr.confirmed(ack(1))
	tr.confirmed(nack(2))
	errs := errsOf(t, b)
	if errs[0] != nil || errs[1] == nil || !strings.Contains(errs[1].Error(), "nacked") ||
		errors.Is(errs[1], sinks.ErrNotConnected) || errors.Is(errs[1], sinks.ErrPermanent) {
		t.Fatalf("results %v", errs)
	}
}

func TestLostConfirmFailsAsConnectionProblem(t *testing.T) {
	tr, b := track(identity{"a", "ex", "rk"}, identity{"b", "ex", "rk"}, identity{"c", "ex", "rk"})
	tr.confirmed(ack(1))
	tr.confirmed(ack(3)) // the library dropped 2's
	errs := errsOf(t, b)
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], sinks.ErrNotConnected) {
		t.Fatalf("results %v, want only message 1 failed with ErrNotConnected", errs)
	}
}

func TestChannelCloseNeverReportsSuccess(t *testing.T) {
	tr, b := track(identity{"a", "ex", "rk"}, identity{"b", "ex", "rk"})
	tr.returned(ret(identity{"a", "ex", "rk"}))
	tr.fail(blameFor(&amqp091.Error{Code: 320, Reason: "CONNECTION_FORCED"}, true, 0))
	for i, err := range errsOf(t, b) {
		if !errors.Is(err, sinks.ErrNotConnected) {
			t.Errorf("message %d: %v, want ErrNotConnected", i, err)
		}
	}
	// A publish refused after the close fails with the same blame.
	late := newBatch(1)
	tr.park(&pending{b: late, i: 0, id: identity{"c", "ex", "rk"}})
	if err := errsOf(t, late)[0]; !errors.Is(err, sinks.ErrNotConnected) {
		t.Errorf("late message: %v", err)
	}
	if _, ok := tr.add(9, &pending{b: newBatch(1)}); ok {
		t.Errorf("a closed tracker accepted a tag")
	}
}

// TestWindowRefusesTagsUntilAQuarterIsConfirmed: a full window hands out a
// room to wait on, which closes once a quarter of the window is confirmed
// (not at the first confirm), or at once when the channel ends.
func TestWindowRefusesTagsUntilAQuarterIsConfirmed(t *testing.T) {
	tr := newTracker(8)
	b := newBatch(9)
	for i := range 8 {
		if room, ok := tr.add(uint64(i+1), &pending{b: b, i: i}); room != nil || !ok {
			t.Fatalf("tag %d refused below the window (room %v, ok %v)", i+1, room, ok)
		}
	}
	room, ok := tr.add(9, &pending{b: b, i: 8})
	if room == nil || !ok {
		t.Fatalf("tag 9 beyond a window of 8: room %v, ok %v, want a room to wait on", room, ok)
	}
	isClosed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	tr.confirmed(ack(1))
	if isClosed(room) {
		t.Fatalf("room closed after one confirm of a window of 8, want after a quarter")
	}
	tr.confirmed(ack(2))
	if !isClosed(room) {
		t.Fatalf("room still closed with a quarter of the window free")
	}
	if room, ok := tr.add(9, &pending{b: b, i: 8}); room != nil || !ok {
		t.Fatalf("tag 9 refused with room (room %v, ok %v)", room, ok)
	}
	if tr.peak != 8 {
		t.Errorf("peak %d, want the window, 8", tr.peak)
	}

	tr.add(10, &pending{b: b, i: 8}) // fills the window again
	room, _ = tr.add(11, &pending{b: b, i: 8})
	if room == nil {
		t.Fatalf("full window gave no room to wait on")
	}
	tr.fail(func(*pending) error { return errClosed })
	if !isClosed(room) {
		t.Fatalf("the channel ended and the room did not close")
	}
	if _, ok := tr.add(12, &pending{b: b, i: 8}); ok {
		t.Fatalf("a closed tracker accepted a tag")
	}
}

func TestBlameFor(t *testing.T) {
	noExchange := &amqp091.Error{Code: 404, Reason: "NOT_FOUND - no exchange 'orders' in vhost '/'", Server: true, Recover: true}
	tests := []struct {
		name       string
		err        *amqp091.Error
		connClosed bool
		exchange   string
		notConn    bool
		contains   string
	}{
		{"connection lost", &amqp091.Error{Code: 501, Reason: "EOF"}, true, "orders", true, "EOF"},
		{"graceful close", nil, false, "orders", true, "connection closed"},
		{"hard error", &amqp091.Error{Code: 541, Reason: "INTERNAL_ERROR", Server: true}, false, "orders", true, "INTERNAL_ERROR"},
		{"soft error, connection gone too", noExchange, true, "orders", true, "NOT_FOUND"},
		{"no exchange, its message", noExchange, false, "orders", false, "no exchange 'orders'"},
		{"no exchange, another message", noExchange, false, "other", true, "NOT_FOUND"},
		{"access refused", &amqp091.Error{Code: 403, Reason: "ACCESS_REFUSED - access to exchange 'orders' in vhost '/' refused for user 'u'", Server: true, Recover: true}, false, "orders", false, "ACCESS_REFUSED"},
		{"precondition naming nothing", &amqp091.Error{Code: 406, Reason: "PRECONDITION_FAILED - message size 9 is larger than configured max size 8", Server: true, Recover: true}, false, "orders", false, "PRECONDITION_FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := blameFor(tt.err, tt.connClosed, 0)(&pending{id: identity{"id", tt.exchange, "rk"}})
			if got := errors.Is(err, sinks.ErrNotConnected); got != tt.notConn {
				t.Errorf("%v: ErrNotConnected %v, want %v", err, got, tt.notConn)
			}
			if errors.Is(err, sinks.ErrPermanent) {
				t.Errorf("%v is permanent", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("%v does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestBatchResult(t *testing.T) {
	shared := errors.New("down")
	b := newBatch(2)
	b.resolveFrom(0, shared)
	if err := b.result(); err != shared { //nolint:errorlint // identity
		t.Errorf("all failed alike: %v, want the shared error itself", err)
	}
	b = newBatch(2)
	b.resolve(0, nil)
	b.resolve(1, errors.New("x"))
	b.resolve(1, nil) // only the first result counts
	var be *sinks.BatchError
	if err := b.result(); !errors.As(err, &be) || be.Errs[0] != nil || be.Errs[1] == nil {
		t.Errorf("partial failure: %v", err)
	}
	b = newBatch(1)
	b.resolve(0, nil)
	if err := b.result(); err != nil {
		t.Errorf("all confirmed: %v", err)
	}
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	cfg, err := Config{URL: "amqp://u:secret@h/"}.withDefaults()
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	if cfg.MaxMessageSize != 128<<20 || cfg.ReconnectMin != 100*time.Millisecond || cfg.ReconnectMax != 5*time.Second {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.MaxUnconfirmed != DefaultMaxUnconfirmed {
		t.Errorf("MaxUnconfirmed default %d, want %d", cfg.MaxUnconfirmed, DefaultMaxUnconfirmed)
	}
	_, err = Config{URL: "http://u:secret@h/", MaxMessageSize: -1, ReconnectMin: time.Minute, ReconnectMax: time.Second, MaxUnconfirmed: -1}.withDefaults()
	if err == nil {
		t.Fatalf("invalid config accepted")
	}
	for _, want := range []string{"URL", "MaxMessageSize", "ReconnectMin", "MaxUnconfirmed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q shows the password", err)
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Errorf("New accepted an empty URL")
	}
}
