package e2e

import (
	"bufio"
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

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
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

func TestKafkaEveryMessageReadOnceByAConsumerGroupNeverEarly(t *testing.T) {
	t.Parallel()
	name := e2etest.Unique(t)
	rdb := e2etest.ConnectRedis(t, name)
	addr := startDevkafka(t, topic, 4)
	group := e2etest.ConsumeKafkaGroup(t, []string{addr}, topic, name)
	const n = 20000
	p := schedule(t, rdb, name, n, time.Now().Add(3*time.Second), 4*time.Second)
	d := startDaemon(t, map[string]string{
		"DELAYBRIDGE_KEY_PREFIX":             name,
		"DELAYBRIDGE_TOPICS":                 topic,
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS":     fmt.Sprint(slots),
		"DELAYBRIDGE_TOPIC_ORDERS_SINK":      "kafka",
		"DELAYBRIDGE_TOPIC_ORDERS_KAFKA_KEY": "id",
		"DELAYBRIDGE_KAFKA_BROKERS":          addr,
		"DELAYBRIDGE_HEARTBEAT_INTERVAL":     "200ms",
		"DELAYBRIDGE_HEARTBEAT_TTL":          "1s",
	})
	e2etest.WaitFor(t, 90*time.Second, fmt.Sprintf("%d records", n), func() bool { return group.Received() >= n })
	time.Sleep(time.Second)
	stop(t, d)
	got := group.Deliveries()
	if o := verdict(t, p, nil, got); o.Duplicates != 0 {
		t.Errorf("%d duplicates without a crash or broker fault", o.Duplicates)
	}
	for i, d := range got {
		if d.Key != d.ID || d.ID == "" {
			t.Fatalf("record %d: key %q, id header %q (KAFKA_KEY=id)", i, d.Key, d.ID)
		}
	}
	expectEmpty(t, rdb, name)
}
