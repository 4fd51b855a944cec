package chaos

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
)

// advertised is a listener that tells Kafka clients to connect elsewhere:
// kfake advertises its listener's address in metadata, so this is how a
// fault proxy gets between the daemon and the broker for good, not only
// for the bootstrap connection.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (l advertised) Addr() net.Addr { return l.addr }

// kafkaBroker is a one-broker Kafka (kfake) whose listener advertises a
// fault proxy's address: every client that follows the metadata goes
// through the proxy, a client that dials with dialAround does not.
type kafkaBroker struct {
	cluster *kfake.Cluster
	proxy   *faultproxy.Proxy
	real    string // the broker's own address
}

// newKafkaBroker runs a kafkaBroker (kfake, with opts) with topic of
// partitions partitions until cleanup.
func newKafkaBroker(t *testing.T, topic string, partitions int32, opts ...kfake.Opt) *kafkaBroker {
	t.Helper()
	k := &kafkaBroker{}
	listen := func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		k.real = ln.Addr().String()
		k.proxy, err = faultproxy.New(context.Background(), k.real)
		if err != nil {
			ln.Close()
			return nil, err
		}
		return advertised{Listener: ln, addr: proxyAddr{k.proxy.Addr()}}, nil
	}
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic), kfake.ListenFn(listen)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		if k.proxy != nil {
			k.proxy.Close()
		}
		t.Fatalf("kfake cluster: %v", err)
	}
	k.cluster = c
	t.Cleanup(func() {
		c.Close()
		k.proxy.Close()
	})
	return k
}

// dialAround dials the broker itself where a client would dial the proxy.
func (k *kafkaBroker) dialAround(ctx context.Context, network, host string) (net.Conn, error) {
	if host == k.proxy.Addr() {
		host = k.real
	}
	var d net.Dialer
	return d.DialContext(ctx, network, host)
}

// fakeKafka runs a kafkaBroker (kfake, with opts) with topic of partitions
// partitions, and a consumer of topic that goes around the proxy. It
// returns the proxy: DELAYBRIDGE_KAFKA_BROKERS is its address.
func fakeKafka(t *testing.T, topic string, partitions int32, opts ...kfake.Opt) (*faultproxy.Proxy, *e2etest.Kafka) {
	t.Helper()
	k := newKafkaBroker(t, topic, partitions, opts...)
	return k.proxy, e2etest.ConsumeKafka(t, []string{k.real}, topic, k.dialAround)
}

// proxyAddr is a TCP address given as text.
type proxyAddr struct{ s string }

func (a proxyAddr) Network() string { return "tcp" }
func (a proxyAddr) String() string  { return a.s }

// kafkaBridge is a bridge whose topic goes to a kfake topic behind a proxy.
func kafkaBridge(t *testing.T, slots int, opts ...kfake.Opt) (*bridge, *faultproxy.Proxy, *e2etest.Kafka) {
	t.Helper()
	b := newBridge(t, slots, nil)
	p, k := fakeKafka(t, b.name, 3, opts...)
	delete(b.vars, "DELAYBRIDGE_TOPIC_ORDERS_EXCHANGE")
	delete(b.vars, "DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY")
	b.set(
		"DELAYBRIDGE_TOPIC_ORDERS_SINK", "kafka",
		"DELAYBRIDGE_TOPIC_ORDERS_KAFKA_TOPIC", b.name,
		"DELAYBRIDGE_KAFKA_BROKERS", p.Addr(),
	)
	return b, p, k
}
