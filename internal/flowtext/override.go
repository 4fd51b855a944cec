package flowtext

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/delaybridge/delaybridge/flowstate"
)

// ParseOverride reads a change of limits as delaybridge limit and the
// console take it: rate, deliveries per second (a positive decimal, or
// "none" to lift it), and holdAbove, ready messages (a whole number, or
// "none"); "" leaves a field unset.
func ParseOverride(rate, holdAbove string) (flowstate.Override, error) {
	var o flowstate.Override
	if rate = strings.TrimSpace(rate); rate != "" {
		r := 0.0
		if rate != "none" {
			v, err := strconv.ParseFloat(rate, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < flowstate.MinRate || v > 10_000_000 {
				return o, fmt.Errorf(`rate %q: want a positive decimal (e.g. 300 or 0.5), at least %g (pause a topic to stop it), at most 10000000, or "none"`, rate, flowstate.MinRate)
			}
			r = v
		}
		o.Rate = &r
	}
	if holdAbove = strings.TrimSpace(holdAbove); holdAbove != "" {
		h := -1
		if holdAbove != "none" {
			v, err := strconv.Atoi(holdAbove)
			if err != nil || v < 0 || v > math.MaxInt32 {
				return o, fmt.Errorf(`hold-above %q: want a whole number of ready messages, or "none"`, holdAbove)
			}
			h = v
		}
		o.HoldAbove = &h
	}
	return o, nil
}
