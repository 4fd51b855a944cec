package flowtext

import (
	"strings"
	"testing"
)

// TestTinyRateOverrideIsRefused: limit --rate and the console's form refuse a
// rate below flowstate.MinRate (1e-300 was accepted and stopped its topic
// silently), naming the minimum.
func TestTinyRateOverrideIsRefused(t *testing.T) {
	for _, rate := range []string{"1e-300", "1e-11", "0.0009"} {
		if _, err := ParseOverride(rate, ""); err == nil || !strings.Contains(err.Error(), "at least 0.001") {
			t.Errorf("limit --rate %s: %v, want refused naming the minimum", rate, err)
		}
	}
	if _, err := ParseOverride("0.001", ""); err != nil {
		t.Errorf("the minimum refused: %v", err)
	}
}
