// Package envelope is the member format of envelope topics (no Redis):
// encoding, decoding and the limits of a message, shared by the queue that
// stores members and by any producer that writes them itself.
//
// An envelope is the member format of envelope topics (queue.FormatEnvelope): one JSON object
//
//	{"id":"order-42","body":"text","headers":{"k":"v"},"routing_key":"orders.eu"}
//
// with these fields (any other field makes the member invalid, so a typo such
// as "routingKey" is reported instead of silently ignored):
//   - id (required): the message id delivered with every attempt; 1 to
//     MaxIDLen bytes of UTF-8 without control characters. The slot is
//     CRC32-IEEE(id) & (slots-1).
//   - body: a JSON string carries its UTF-8 text; any other JSON value
//     (object, array, number, boolean) is delivered as its JSON text, byte for
//     byte; null or absent is an empty body.
//   - body_b64: standard base64 (with padding) of a binary body, instead of
//     body (never both); Encode writes it for a body that is not
//     UTF-8 or that JSON's escapes would make longer than base64.
//   - headers: an object of string values, delivered as AMQP headers or Kafka
//     record headers. Names are 1 to MaxFieldLen bytes and may not start with
//     ReservedHeaderPrefix (delaybridge's own headers).
//   - headers_b64: headers whose values are bytes that are not UTF-8 (a
//     Kafka header value), each value in standard base64; same rules for
//     names, and no name in both objects.
//   - routing_key: the AMQP routing key, or Kafka record key, of this message
//     (up to MaxFieldLen bytes); empty means the topic's.
//   - routing_key_b64: the key in standard base64 instead (never both), for
//     a key that is not UTF-8, longer than MaxFieldLen (up to MaxKeyLen) or
//     present and empty (a Kafka record's empty key is not its null key):
//     "" is the empty key.
//   - key: the fair-share key of the message (see Message.Key): 1 to
//     MaxFairKeyLen bytes of UTF-8 without control characters; absent or
//     "" is no key. Written second, right after id, so the scripts of a
//     fair topic read it without decoding the member. A daemon older than
//     this field refuses envelopes that hold it (unknown field).
//   - properties: AMQP message properties (see Properties), written only
//     when some are set. A daemon older than this field refuses envelopes
//     that hold it (unknown field), so every replica must run a version
//     that knows it before anything writes it (the intake does).
//
// headers_b64 and routing_key_b64 are written only for what the fields
// before them cannot hold, so an envelope of text is the same member as
// before they existed. A daemon older than them refuses an envelope that
// holds one (unknown field) and dead-letters it with that reason: it never
// delivers the message without its key or headers, and the dead set's
// requeue delivers it once every replica knows the fields. Before them, the
// intake dead-lettered such records itself (a key or header that is not
// UTF-8) or dropped an empty key.
//
// The whole member must be valid UTF-8 and hold exactly one object, and no
// field may appear twice.
package envelope
