package flowtext

import "testing"

func TestParseOverride(t *testing.T) {
	o, err := ParseOverride(" 0.5 ", "none")
	if err != nil || o.Rate == nil || *o.Rate != 0.5 || o.HoldAbove == nil || *o.HoldAbove != -1 {
		t.Fatalf("ParseOverride(0.5, none) = %+v, %v", o, err)
	}
	if o, err := ParseOverride("", ""); err != nil || !o.IsZero() {
		t.Errorf("ParseOverride of nothing = %+v, %v; want nothing set", o, err)
	}
	for _, bad := range [][2]string{{"0", ""}, {"fast", ""}, {"NaN", ""}, {"", "-3"}, {"", "1.5"}} {
		if _, err := ParseOverride(bad[0], bad[1]); err == nil {
			t.Errorf("ParseOverride(%q, %q) accepted", bad[0], bad[1])
		}
	}
}
