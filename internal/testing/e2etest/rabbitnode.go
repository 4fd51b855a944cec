package e2etest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RabbitNode is a RabbitMQ node of the test's own (rabbitmq-server on free
// loopback ports, its data in a temporary directory), for what the shared
// broker must never be put through: a memory alarm blocks every publisher of
// a node. It is stopped at cleanup; should the test process die first, the
// node ends on its own after rabbitNodeLife.
type RabbitNode struct {
	URL  string // amqp://guest:guest@127.0.0.1:<port>/
	Name string // its Erlang node name, for rabbitmqctl -n
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when rabbitmq-server has exited
}

// rabbitNodeLife bounds a node whose test never stopped it.
const rabbitNodeLife = 15 * time.Minute

// StartRabbitNode starts a node and waits until it accepts AMQP
// connections. It fails the test when rabbitmq-server is not installed.
func StartRabbitNode(tb testing.TB) *RabbitNode {
	tb.Helper()
	for _, bin := range []string{"rabbitmq-server", "rabbitmqctl", "timeout"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("%s is required to run a RabbitMQ node of the test's own: %v", bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "dbtest-rabbit-")
	if err != nil {
		tb.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	n := &RabbitNode{Name: "dbtest-" + hex.EncodeToString(b) + "@localhost", dir: dir}
	tb.Cleanup(n.stop)
	if err := n.start(); err != nil {
		tb.Fatalf("start a RabbitMQ node: %v\n%s", err, n.logTail())
	}
	return n
}

func (n *RabbitNode) start() error {
	amqpPort, err := freePort()
	if err != nil {
		return err
	}
	distPort, err := freePort()
	if err != nil {
		return err
	}
	for _, d := range []string{"mnesia", "log"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(n.dir, "enabled_plugins"), []byte("[].\n"), 0o644); err != nil {
		return err
	}
	// Run as root, rabbitmq-server switches to the rabbitmq user, which must
	// own the node's files.
	if u, err := user.Lookup("rabbitmq"); err == nil && os.Geteuid() == 0 {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		_ = filepath.Walk(n.dir, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, uid, gid) })
	}
	n.URL = fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", amqpPort)
	out, err := os.Create(filepath.Join(os.TempDir(), filepath.Base(n.dir)+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	n.cmd = exec.Command("timeout", strconv.Itoa(int(rabbitNodeLife.Seconds())), "rabbitmq-server")
	n.cmd.Dir = n.dir
	n.cmd.Stdout, n.cmd.Stderr = out, out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	n.cmd.Env = append(os.Environ(),
		"RABBITMQ_NODENAME="+n.Name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(amqpPort),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(distPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(n.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(n.dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(n.dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(n.dir, "rabbitmq"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(n.dir, "advanced.config"),
		"RABBITMQ_PID_FILE="+filepath.Join(n.dir, "pid"),
	)
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("start rabbitmq-server: %w", err)
	}
	n.done = make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	return n.awaitStartup(90 * time.Second)
}

// awaitStartup waits until the node has booted. rabbitmqctl await_startup
// fails at once (exit 69, "not running at all") while the new node has not
// yet registered with epmd, which on a loaded machine takes seconds: it is
// asked again until the node is up, rabbitmq-server exits, or the time is
// spent.
func (n *RabbitNode) awaitStartup(within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		_, err := n.Ctl(ctx, "await_startup", "--timeout", strconv.Itoa(int(within.Seconds())))
		if err == nil {
			return nil
		}
		select {
		case <-n.done:
			return fmt.Errorf("rabbitmq-server exited before it booted (%v): %w", n.cmd.ProcessState, err)
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Ctl runs rabbitmqctl against the node and returns its output.
func (n *RabbitNode) Ctl(ctx context.Context, args ...string) (string, error) {
	args = append([]string{"-n", n.Name}, args...)
	out, err := exec.CommandContext(ctx, "rabbitmqctl", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("rabbitmqctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func (n *RabbitNode) stop() {
	if n.done != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := n.Ctl(ctx, "stop")
		cancel()
		if err != nil {
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-n.done
	}
	_ = os.RemoveAll(n.dir)
	_ = os.Remove(filepath.Join(os.TempDir(), filepath.Base(n.dir)+".out"))
}

func (n *RabbitNode) logTail() string {
	b, _ := os.ReadFile(filepath.Join(os.TempDir(), filepath.Base(n.dir)+".out"))
	return tail(string(b), 3000)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
