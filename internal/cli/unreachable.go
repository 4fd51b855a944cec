package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/delaybridge/delaybridge/config"
)

// redisUnreachable reports whether err is a failure to reach Redis at all
// (refused, timed out, no route, name not found), as opposed to an answer
// Redis gave.
func redisUnreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}

// explainUnreachable follows an error that is a failure to reach Redis
// with what to check: the address, the variable that sets it, and check.
// Before, it read "load registry dq:topics: dial tcp …: connection
// refused", which names neither Redis nor the variable.
func (c *cli) explainUnreachable(err error) {
	if !redisUnreachable(err) {
		return
	}
	fmt.Fprintf(c.s.err, "delaybridge %s: %s\n", c.name, redisHint(c.cfg))
}

// redisHint is what to check when Redis does not answer, in the CLI's
// words and the daemon's outage line: the address, the variable that sets
// it, and check.
func redisHint(cfg config.Config) string {
	where := "the configured address"
	if o, err := cfg.Redis.Options(); err == nil && len(o.Addrs) > 0 {
		where = strings.Join(o.Addrs, ", ")
	}
	return "Redis at " + where + " does not answer: is it running, and is DELAYBRIDGE_REDIS_URL " +
		"(or DELAYBRIDGE_REDIS_ADDRS) right? `delaybridge check` tests the connection"
}
