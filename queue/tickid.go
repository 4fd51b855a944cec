package queue

// checkOwnID refuses, for a message a producer schedules, an id of the form
// of a recurrence tick's id ("<recurrence id>@<ms>", TickID): such an id
// would be found by get and cancel as the tick, or the tick as it, and both
// deliveries would carry one id, so an idempotent consumer would drop one.
// The form is reserved on every topic (a recurrence may be set later).
//
// It refuses "." and ".." too (checkPathID), and the form of an intake's
// generated id (checkReservedID) unless intake says the id is one.
func checkOwnID(id string, intake bool) error {
	if !intake {
		if err := checkReservedID(id); err != nil {
			return err
		}
	}
	if _, ok := recurrenceOfTick(id); ok {
		return invalid("id %q has the form <id>@<digits> of a recurrence tick's id, which is reserved", id)
	}
	return checkPathID(id)
}

// checkPathID refuses, for an id a producer gives a new message or
// recurrence, "." and "..": a URL path cannot name them, so the API's GET,
// PATCH and DELETE by id could never reach them. It is a front door's rule,
// not the envelope's: an envelope stored with such an id (before the rule)
// still decodes, encodes again and is delivered.
func checkPathID(id string) error {
	if id == "." || id == ".." {
		return invalid("id %q cannot be named in a URL path", id)
	}
	return nil
}
