package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

const consoleUsage = `usage: delaybridge console

Serves the web console on DELAYBRIDGE_CONSOLE_ADDR (default 127.0.0.1:8081):
every topic's backlog, slots, messages and the replicas, refreshing by
itself; and, with DELAYBRIDGE_CONSOLE_TOKEN set, the actions of the CLI
(pause, resume, limit, requeue, purge, cancel, reschedule), each confirmed
first. The overview and each topic's page show its flow control: the limits
in force and whether a replica holds the topic now, and why.
Without a token the console is read-only. It answers only the Host names of
DELAYBRIDGE_CONSOLE_HOSTS (default: localhost, 127.0.0.1, [::1] and the
listen host, with the port); DELAYBRIDGE_CONSOLE_READ_REQUIRES_TOKEN=true puts
message bodies behind the token too. It reads the same DELAYBRIDGE_*
variables as the other commands: topics from DELAYBRIDGE_TOPICS, else those
the daemon registered in Redis.

Examples:
  DELAYBRIDGE_CONSOLE_TOKEN_FILE=/run/secrets/console delaybridge console
`

// runConsole is `delaybridge console`.
func runConsole(ctx context.Context, args []string, s stdio) int {
	c, code := openServer("console", consoleUsage, args, s)
	if c == nil {
		return code
	}
	defer c.close()
	log := newLogger(c.cfg, s)
	layouts := make([]queue.Layout, len(c.cfg.Topics))
	limits := map[string]flowstate.Limits{}
	for i, t := range c.cfg.Topics {
		layouts[i] = layoutOf(c.cfg.KeyPrefix, t)
		limits[t.Name] = flowstate.EnvLimits(t.RateLimit, t.HoldQueue, t.HoldAbove)
	}
	ln, err := net.Listen("tcp", c.cfg.Console.Addr)
	if err != nil {
		return c.fail(fmt.Errorf("listen on %s: %w", c.cfg.Console.Addr, err))
	}
	ln = limitConns(ln, c.cfg.Console.MaxConns)
	hosts := c.cfg.Console.Hosts
	if len(hosts) == 0 {
		hosts = console.DefaultHosts(ln.Addr(), c.cfg.Console.Addr)
	}
	srv, err := console.New(console.Options{Queue: c.q, Prefix: c.cfg.KeyPrefix, Configured: layouts, Limits: limits,
		Token: c.cfg.Console.Token, SecureCookie: c.cfg.Console.SecureCookie, Hosts: hosts,
		ReadRequiresToken: c.cfg.Console.ReadRequiresToken, SessionTTL: c.cfg.Console.SessionTTL,
		OwnershipAll: c.cfg.Ownership == "all", Log: log})
	if err != nil {
		_ = ln.Close()
		return c.fail(err)
	}
	log.Info("console listening", "addr", ln.Addr().String(), "read_only", c.cfg.Console.Token == "",
		"hosts", hosts, "read_requires_token", c.cfg.Console.ReadRequiresToken)
	if err := srv.Serve(ctx, ln); err != nil {
		return c.fail(err)
	}
	return exitOK
}
