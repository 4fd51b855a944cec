package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	err := Config{
		Brokers:        []string{"no-port"},
		KeyMode:        "partition",
		Compression:    "brotli",
		SASLMechanism:  "gssapi",
		SASLUsername:   "u",
		SASLPassword:   "p",
		MaxMessageSize: -1,
		MaxRecordBytes: 10,
	}.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{`broker "no-port"`, "no topic", `key mode "partition"`, `compression "brotli"`,
		`sasl mechanism "gssapi"`, "max message size -1", "max record bytes 10"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestValidateAcceptsDefaults(t *testing.T) {
	t.Parallel()
	if err := (Config{Brokers: []string{"127.0.0.1:9092"}, Topic: "orders"}).Validate(); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	if err := (Config{Brokers: []string{"k:9093"}, Topic: "t", SASLMechanism: "plain"}).Validate(); err == nil {
		t.Error("sasl without credentials accepted")
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Error("New accepted an empty config")
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		err  error
		want string
	}{
		{kafkago.UnknownTopicOrPartition, "retryable"},
		{kafkago.LeaderNotAvailable, "retryable"},
		{kafkago.NotLeaderForPartition, "retryable"},
		{kafkago.RequestTimedOut, "retryable"},
		{kafkago.TopicAuthorizationFailed, "retryable"},
		{fmt.Errorf("produce: %w", context.DeadlineExceeded), "not-connected"}, // kafka-go's own request deadline
		{kafkago.BrokerNotAvailable, "not-connected"},
		{kafkago.SASLAuthenticationFailed, "not-connected"},
		{fmt.Errorf("kafka.(*Client).Produce: %w", refused), "not-connected"},
		{io.EOF, "not-connected"},
		{io.ErrUnexpectedEOF, "not-connected"},
		{syscall.ECONNRESET, "not-connected"},
		{io.ErrClosedPipe, "closed"},
	}
	for _, tt := range tests {
		if got := class(classify("t", tt.err)); got != tt.want {
			t.Errorf("classify(%v) is %s, want %s", tt.err, got, tt.want)
		}
	}
	for _, e := range []error{kafkago.MessageSizeTooLarge, kafkago.InvalidRecord, kafkago.InvalidTimestamp, kafkago.RecordListTooLarge} {
		if !recordRejected(fmt.Errorf("wrapped: %w", e)) {
			t.Errorf("%v is not a record rejection", e)
		}
	}
	if recordRejected(kafkago.NotEnoughReplicas) || recordRejected(errors.New("x")) {
		t.Error("a transient error counted as a record rejection")
	}
}
