package config

import "testing"

// TestRedactedShowsTheIntakePrefetchDefaultWithoutAnIntake: the start-up
// log showed INTAKE_PREFETCH "0" for a topic without an intake, where the
// default is 256.
func TestRedactedShowsTheIntakePrefetchDefaultWithoutAnIntake(t *testing.T) {
	got := Topic{Name: "orders", Var: "ORDERS"}.intakeValues("TOPIC_ORDERS_")
	if got["TOPIC_ORDERS_INTAKE_PREFETCH"] != "256" || got["TOPIC_ORDERS_INTAKE"] != "none" {
		t.Errorf("intake values without an intake = %v, want INTAKE none and INTAKE_PREFETCH 256", got)
	}
}
