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

// TestSuggestNamesTheVariableAMisspeltOneMeant: ORDRES is ORDERS with two
// letters swapped; a name far from every variable has no suggestion.
func TestSuggestNamesTheVariableAMisspeltOneMeant(t *testing.T) {
	c := Config{Topics: []Topic{{Name: "orders", Var: "ORDERS"}}}
	if got := c.Suggest("DELAYBRIDGE_TOPIC_ORDRES_SLOTS"); got != "DELAYBRIDGE_TOPIC_ORDERS_SLOTS" {
		t.Errorf("Suggest(ORDRES_SLOTS) = %q", got)
	}
	if got := c.Suggest("DELAYBRIDGE_SOMETHING_ELSE_ENTIRELY"); got != "" {
		t.Errorf("Suggest of an unrelated name = %q, want none", got)
	}
}
