package main

import (
	"os"
	"runtime"
	"strings"
)

// machine fills in what a reader needs to tell a CPU-bound 2-core figure
// from a 16-core one: the CPUs, their model and the bench's GOMAXPROCS
// (the daemon sets its own unless -daemon-env gives one).
func (r *Report) machine() {
	r.CPUs = runtime.NumCPU()
	r.GOMAXPROCS = runtime.GOMAXPROCS(0)
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		r.CPUModel = cpuModel(string(b))
	}
}

// cpuModel is the first "model name" of /proc/cpuinfo's text (x86), else
// its first "Model" or "CPU part" line (arm64), else "".
func cpuModel(cpuinfo string) string {
	for _, key := range []string{"model name", "Model", "CPU part"} {
		for _, line := range strings.Split(cpuinfo, "\n") {
			name, value, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(name) == key {
				if v := strings.TrimSpace(value); v != "" {
					return v
				}
			}
		}
	}
	return ""
}
