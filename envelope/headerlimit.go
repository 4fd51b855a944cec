package envelope

// MaxHeaderBytes bounds an envelope's headers and properties as an AMQP
// content header would carry them (HeaderBytes): every front door (the Go
// API, the CLI, the HTTP API, the intake) refuses a message beyond it. The
// AMQP sink sends the content header as one frame, and RabbitMQ closes the
// connection over a frame larger than its frame_max (131072 by default); half
// of that leaves room for delaybridge's own headers and for a broker tuned
// lower. A message written around the front doors (a raw ZADD) that does not
// fit the broker's frame is refused by the sink and dead-lettered.
const MaxHeaderBytes = 64 << 10

// HeaderBytes estimates from above what headers and p take in an AMQP field
// table and property list: each header's name and value with their lengths
// and type, each property with its length byte.
func HeaderBytes(headers map[string]string, p Properties) int {
	n := 4
	for k, v := range headers {
		n += 1 + len(k) + 1 + 4 + len(v)
	}
	for _, s := range []string{p.ContentType, p.ContentEncoding, p.CorrelationID, p.ReplyTo,
		p.Expiration, p.Type, p.AppID} {
		n += 1 + len(s)
	}
	return n + 8 + 1 // timestamp, priority
}

// checkHeaderBytes refuses headers and properties beyond MaxHeaderBytes.
func checkHeaderBytes(headers map[string]string, p Properties) error {
	if n := HeaderBytes(headers, p); n > MaxHeaderBytes {
		return invalid("headers and properties take %d bytes, more than %d (a broker's frame must carry them)", n, MaxHeaderBytes)
	}
	return nil
}
