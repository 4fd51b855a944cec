package main

import (
	"strings"
	"testing"
)

func TestFairShareRunsByDefaultAfterFairness(t *testing.T) {
	run := strings.Split(defaultRun, ",")
	at := map[string]int{}
	for i, n := range run {
		at[n] = i + 1
	}
	if at["fair-share"] == 0 || at["fair-share"] < at["fairness"] {
		t.Errorf("default run %q: want fair-share in it, after fairness", defaultRun)
	}
	found := false
	for _, s := range scenarios {
		found = found || s.name == "fair-share"
	}
	if !found || fullSizes.fairShare != 100_000 || quickSizes.fairShare != 10_000 {
		t.Errorf("fair-share registered %v, sizes %d/%d: want it registered, 100,000 (-quick 10,000) as issue #50 states", found, fullSizes.fairShare, quickSizes.fairShare)
	}
}
