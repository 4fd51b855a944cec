package flowstate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLimitsInForceAreTheRunTimeOnesOverTheEnvironments(t *testing.T) {
	rate, none, hold := 300.0, 0.0, 50
	for _, c := range []struct {
		name string
		env  Limits
		o    Override
		want Limits
	}{
		{"nothing", EnvLimits(0, "", 0), Override{}, Limits{HoldAbove: -1}},
		{"environment", EnvLimits(5, "work", 1000), Override{}, Limits{Rate: 5, HoldQueue: "work", HoldAbove: 1000, Source: "environment"}},
		{"hold above without a queue is none", EnvLimits(0, "", 1000), Override{}, Limits{HoldAbove: -1}},
		{"run-time rate", EnvLimits(5, "work", 1000), Override{Rate: &rate}, Limits{Rate: 300, HoldQueue: "work", HoldAbove: 1000, Source: "run time"}},
		{"run time lifts the rate", EnvLimits(5, "", 0), Override{Rate: &none}, Limits{HoldAbove: -1, Source: "run time"}},
		{"run-time hold", EnvLimits(0, "work", 1000), Override{HoldAbove: &hold}, Limits{HoldQueue: "work", HoldAbove: 50, Source: "run time"}},
	} {
		if d := cmp.Diff(c.want, c.o.InForce(c.env)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}
