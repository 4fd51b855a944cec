package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

var devkafkaReady = regexp.MustCompile(`^devkafka ready addr=(\S+) topics=`)

// startDevkafka builds and runs cmd/devkafka with the given topics and
// returns its address.
func startDevkafka(t *testing.T, topics string, partitions int) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(binary), "devkafka")
	buildOnce.Do(func() {
		build := exec.Command("go", "build", "-o", bin, "../cmd/devkafka")
		build.Stderr = os.Stderr
		buildErr = build.Run()
	})
	if buildErr != nil {
		t.Fatalf("build devkafka: %v", buildErr)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-topics", topics, "-partitions", strconv.Itoa(partitions))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start devkafka: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := devkafkaReady.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("devkafka did not print its ready line within 30 s")
		return ""
	}
}

var (
	buildOnce sync.Once
	buildErr  error
)

// kafkaGroup reads a topic as a consumer group until the test ends.
type kafkaGroup struct {
	mu  sync.Mutex
	got []delivery
	key map[int]string
	hdr map[int]map[string]string
}

func consumeKafka(t *testing.T, addr, topic string) *kafkaGroup {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     []string{addr},
		Topic:       topic,
		GroupID:     "e2e-" + topic,
		MaxWait:     500 * time.Millisecond,
		StartOffset: kafka.FirstOffset,
		MinBytes:    1,
		MaxBytes:    10 << 20,
	})
	g := &kafkaGroup{key: map[int]string{}, hdr: map[int]map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				continue
			}
			d := delivery{body: string(m.Value), at: time.Now()}
			h := map[string]string{}
			for _, kv := range m.Headers {
				h[kv.Key] = string(kv.Value)
			}
			d.due, _ = strconv.ParseInt(h["x-delaybridge-due"], 10, 64)
			d.attempt, _ = strconv.ParseInt(h["x-delaybridge-attempt"], 10, 64)
			d.id = h["x-delaybridge-id"]
			g.mu.Lock()
			g.got = append(g.got, d)
			g.key[len(g.got)-1] = string(m.Key)
			g.hdr[len(g.got)-1] = h
			g.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		r.Close()
	})
	return g
}

func (g *kafkaGroup) deliveries() []delivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]delivery(nil), g.got...)
}

func TestKafkaEveryMessageReadOnceByAConsumerGroupNeverEarly(t *testing.T) {
	t.Parallel()
	name := uniq(t)
	rdb := connectRedis(t, name)
	addr := startDevkafka(t, "orders", 4)
	group := consumeKafka(t, addr, "orders")
	p := &plan{prefix: name, topic: "orders", slots: 8}
	const n = 20000
	schedule(t, rdb, p, n, time.Now().Add(3*time.Second), 4*time.Second)
	d := startDaemon(t, map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":             name,
		"DELAYBRIDGE_TOPICS":                 "orders",
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":     "8",
		"DELAYBRIDGE_TOPIC_ORDERS_SINK":      "kafka",
		"DELAYBRIDGE_TOPIC_ORDERS_KAFKA_KEY": "id",
		"DELAYBRIDGE_KAFKA_BROKERS":          addr,
		"DELAYBRIDGE_HEARTBEAT_INTERVAL":     "200ms",
		"DELAYBRIDGE_HEARTBEAT_TTL":          "1s",
	})
	waitFor(t, 90*time.Second, fmt.Sprintf("%d records", n), func() bool { return len(group.deliveries()) >= n })
	time.Sleep(time.Second)
	if err := d.stop(30 * time.Second); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	got := group.deliveries()
	if dups := verdict(t, p, n, got); dups != 0 {
		t.Errorf("%d duplicates without a crash or broker fault", dups)
	}
	group.mu.Lock()
	for i, d := range got {
		if group.key[i] != d.id || d.id == "" {
			t.Fatalf("record %d: key %q, id header %q (KAFKA_KEY=id)", i, group.key[i], d.id)
		}
	}
	group.mu.Unlock()
	if left := leftKeys(t, rdb, name); len(left) != 0 {
		t.Errorf("redis still holds %v", left)
	}
}
