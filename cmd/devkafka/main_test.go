package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The signal test runs this binary as devkafka itself.
	if os.Getenv("DEVKAFKA_RUN_MAIN") == "1" {
		os.Args = append([]string{"devkafka"}, strings.Fields(os.Getenv("DEVKAFKA_ARGS"))...)
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

var readyLine = regexp.MustCompile(`^devkafka ready addr=(\S+) topics=(\S*)$`)

// start runs devkafka in-process until the test ends and returns its address.
func start(t *testing.T, args ...string) string {
	t.Helper()
	addr, _ := startStoppable(t, args...)
	return addr
}

// partitions returns the partition count of every topic the broker has.
func partitions(t *testing.T, addr string) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata from %s: %v", addr, err)
	}
	out := map[string]int{}
	for _, tp := range resp.Topics {
		out[*tp.Topic] = len(tp.Partitions)
	}
	return out
}

func TestServesTopicsWithPartitions(t *testing.T) {
	t.Parallel()
	addr := start(t, "-addr", "127.0.0.1:0", "-topics", "orders, reminders,orders", "-partitions", "3")
	got := partitions(t, addr)
	if got["orders"] != 3 || got["reminders"] != 3 || len(got) != 2 {
		t.Fatalf("topics %v, want orders and reminders with 3 partitions", got)
	}
}

func TestDataDirKeepsRecordsAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	first, stopFirst := startStoppable(t, "-addr", "127.0.0.1:0", "-topics", "kept", "-data-dir", dir)
	cl, err := kgo.NewClient(kgo.SeedBrokers(first), kgo.DefaultProduceTopic("kept"))
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	cl.Close()
	stopFirst()

	// A new port, and a topic that did not exist before.
	second := start(t, "-addr", "127.0.0.1:0", "-topics", "kept,added", "-data-dir", dir)
	if got := partitions(t, second); got["kept"] != 1 || got["added"] != 1 {
		t.Fatalf("topics after restart %v, want kept and added", got)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(second), kgo.ConsumeTopics("kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	var values []string
	for len(values) < 3 {
		fetches := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %v after restart, want a, b, c", values)
		}
		for _, r := range fetches.Records() {
			values = append(values, string(r.Value))
		}
	}
	if !slices.Equal(values, []string{"a", "b", "c"}) {
		t.Fatalf("records after restart %v, want a, b, c", values)
	}
}

// startStoppable runs devkafka in-process and returns its address and a
// stop that the test may call before it ends.
func startStoppable(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw, io.Discard)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("devkafka: %v", err)
		}
	}
	t.Cleanup(stop)
	m := readyLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		t.Fatalf("devkafka printed %q, want a ready line", line)
	}
	return m[1], stop
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-addr", "nope"},
		{"-partitions", "0"},
		{"-max-message-bytes", "-1"},
		{"-sync"},
		{"-log-level", "loud"},
		{"-bogus"},
		{"extra"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if !errors.Is(err, errUsage) {
			t.Errorf("devkafka %v: %v, want a usage error", args, err)
		}
	}
}

func TestExitsZeroOnSIGTERM(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "DEVKAFKA_RUN_MAIN=1", "DEVKAFKA_ARGS=-addr 127.0.0.1:0 -topics demo")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatalf("stdout pipe: %v", err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start: %v", err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if !readyLine.MatchString(strings.TrimSpace(line)) || !strings.HasSuffix(strings.TrimSpace(line), "topics=demo") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("first line %q, want a ready line with topics=demo", line)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatalf("signal: %v", err)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("after %v: %v, want exit status 0", sig, err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			t.Fatalf("devkafka still running 20s after %v", sig)
		}
	}
}

func TestMaxMessageBytesIsTheBrokerLimit(t *testing.T) {
	t.Parallel()
	addr := start(t, "-addr", "127.0.0.1:0", "-topics", "small", "-max-message-bytes", "2000")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("small"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 500)}).FirstErr(); err != nil {
		t.Fatalf("produce 500 bytes: %v", err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 3000)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce 3000 bytes at a 2000 byte limit: %v, want MESSAGE_TOO_LARGE", err)
	}
}
