package chaos

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delaybridge/delaybridge/internal/e2etest"
	"github.com/delaybridge/delaybridge/internal/faultproxy"
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

// fakeKafka runs a one-broker Kafka (kfake, with opts) with topic of
// partitions partitions behind a fault proxy, and a consumer of topic that
// goes around the proxy. It returns the proxy: DELAYBRIDGE_KAFKA_BROKERS is
// its address.
func fakeKafka(t *testing.T, topic string, partitions int32, opts ...kfake.Opt) (*faultproxy.Proxy, *e2etest.Kafka) {
	t.Helper()
	var p *faultproxy.Proxy
	var real string
	listen := func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		real = ln.Addr().String()
		p, err = faultproxy.New(context.Background(), real)
		if err != nil {
			ln.Close()
			return nil, err
		}
		return advertised{Listener: ln, addr: proxyAddr{p.Addr()}}, nil
	}
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic), kfake.ListenFn(listen)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		if p != nil {
			p.Close()
		}
		t.Fatalf("kfake cluster: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		p.Close()
	})
	around := func(ctx context.Context, network, host string) (net.Conn, error) {
		if host == p.Addr() {
			host = real
		}
		var d net.Dialer
		return d.DialContext(ctx, network, host)
	}
	return p, e2etest.ConsumeKafka(t, []string{real}, topic, around)
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
