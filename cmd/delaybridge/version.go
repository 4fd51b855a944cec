package main

import (
	"context"
	"fmt"
	"runtime"
)

// Stamped at build time: -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = "unknown"
)

func runVersion(_ context.Context, _ []string, s stdio) int {
	fmt.Fprintf(s.out, "delaybridge %s (commit %s, %s)\n", version, commit, runtime.Version())
	return exitOK
}
