package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestCPUModelReadsProcCPUInfo(t *testing.T) {
	for _, tc := range []struct{ name, cpuinfo, want string }{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n", "Intel(R) Xeon(R) Platinum 8480+"},
		{"arm64", "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "0xd0c"},
		{"raspberry pi", "processor\t: 0\nCPU part\t: 0xd08\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n", "Raspberry Pi 4 Model B Rev 1.4"},
		{"nothing", "", ""},
	} {
		if got := cpuModel(tc.cpuinfo); got != tc.want {
			t.Errorf("%s: cpuModel = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestReportRecordsTheMachine: results.json carries the machine beside
// its runs (issue #43 item 4).
func TestReportRecordsTheMachine(t *testing.T) {
	var r Report
	r.machine()
	if r.CPUs != runtime.NumCPU() || r.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Errorf("machine: cpus %d, gomaxprocs %d; want %d and %d", r.CPUs, r.GOMAXPROCS, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	}
	if runtime.GOOS == "linux" && r.CPUModel == "" {
		t.Error("machine: no CPU model read from /proc/cpuinfo")
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"cpus":`, `"cpu_model":`, `"gomaxprocs":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("results.json lacks %s: %s", key, b)
		}
	}
}
