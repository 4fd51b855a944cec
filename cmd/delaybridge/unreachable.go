package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
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
	where := "the configured address"
	if o, oerr := c.cfg.Redis.Options(); oerr == nil && len(o.Addrs) > 0 {
		where = strings.Join(o.Addrs, ", ")
	}
	fmt.Fprintf(c.s.err, "delaybridge %s: Redis at %s does not answer: is it running, and is DELAYBRIDGE_REDIS_URL "+
		"(or DELAYBRIDGE_REDIS_ADDRS) right? `delaybridge check` tests the connection\n", c.name, where)
}
