package queue

import "strings"

// IntakeIDPrefix starts every id an intake generates for a message that
// came without one (IntakeID). The form is reserved: a producer's own id
// (the HTTP API, the CLI, Schedule, ScheduleBatch, ScheduleEach) cannot
// start with it, so no writer of a topic can name, and through the dedup
// window pre-empt, the id an intake will give a message later. Ids an intake
// generated before the form existed (a bare SHA-256 hex, <topic>/<partition>/<offset>)
// stay what they were on the messages that carry them.
const IntakeIDPrefix = "~"

// IntakeID is the id intake door ("amqp", "kafka") gives a message it names
// by name: "~<door>:<name>".
func IntakeID(door, name string) string {
	return IntakeIDPrefix + door + ":" + name
}

// IsIntakeID reports whether id has the reserved form of an intake's
// generated id.
func IsIntakeID(id string) bool { return strings.HasPrefix(id, IntakeIDPrefix) }

// checkReservedID refuses, for a producer's own id, the form of an intake's
// generated id (IntakeID).
func checkReservedID(id string) error {
	if IsIntakeID(id) {
		return invalid("id %q starts with %s, the form reserved for the ids intakes generate", id, IntakeIDPrefix)
	}
	return nil
}
