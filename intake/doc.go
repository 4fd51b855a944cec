// Package intake owns the consumers that take delayed messages from a broker
// and schedule them on an envelope topic: AMQP (a queue, due time from the
// delayed-message plugin's x-delay header or delaybridge's
// x-delaybridge-due) and Kafka (a topic read in a consumer group).
//
// What it guarantees:
//
//   - Nothing is lost. A delivery is acknowledged (AMQP ack, Kafka offset
//     commit) only after Redis confirmed that the message is scheduled, or
//     that it is in the topic's dead set with the reason it could not be
//     scheduled (a malformed delay, a body over the destination's limit).
//     While Redis fails, AMQP deliveries are returned to their queue and
//     Kafka records are retried in place, with a back-off, never skipped.
//   - Nothing doubles. Every message has a stable id (the AMQP message id,
//     Kafka's x-delaybridge-id header, else one derived from the message or
//     its offset), and scheduling an existing id replaces it, so a delivery
//     redelivered after a crash or a lost ack is scheduled once. One that
//     comes back after its first copy fell due is published again, with the
//     same id: the at-least-once of a crash.
//   - The message is delivered as it was sent: body byte for byte, routing
//     key (or record key), headers and AMQP properties, minus the headers
//     that asked for the delay.
//
// Each intake owns its connection (never a sink's) and its goroutines, which
// end when the context passed to Run ends.
package intake
