package queue

// checkOwnID refuses, for a message a producer schedules, an id of the form
// of a recurrence tick's id ("<recurrence id>@<ms>", TickID): such an id
// would be found by get and cancel as the tick, or the tick as it, and both
// deliveries would carry one id, so an idempotent consumer would drop one.
// The form is reserved on every topic (a recurrence may be set later).
func checkOwnID(id string) error {
	if _, ok := recurrenceOfTick(id); ok {
		return invalid("id %q has the form <id>@<digits> of a recurrence tick's id, which is reserved", id)
	}
	return nil
}
