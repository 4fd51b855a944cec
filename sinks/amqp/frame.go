package amqp

import (
	"fmt"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// frameOverhead is what a frame adds to its payload: type, channel and size
// (7 bytes) and the end byte. RabbitMQ closes the connection (501
// FRAME_ERROR, frame_too_large) when a payload exceeds frame_max minus it.
const frameOverhead = 8

// headerFrameSize is, from above, the payload of the content header frame
// that carries p: the library sends it as one frame whatever its size (it
// splits only the body), so a message whose headers and properties do not
// fit the negotiated frame_max breaks the connection instead of failing
// alone.
func headerFrameSize(p amqp091.Publishing) int {
	// class, weight, body size, property flags; delivery mode, priority,
	// timestamp; each short string with its length byte.
	n := 2 + 2 + 8 + 2 + 1 + 1 + 8
	for _, s := range []string{p.ContentType, p.ContentEncoding, p.CorrelationId, p.ReplyTo,
		p.Expiration, p.MessageId, p.Type, p.UserId, p.AppId} {
		n += 1 + len(s)
	}
	return n + tableSize(p.Headers)
}

// tableSize bounds the encoded size of an AMQP field table from above.
func tableSize(t amqp091.Table) int {
	n := 4 // the table's length
	for k, v := range t {
		n += 1 + len(k) + 1 // name, type
		switch v := v.(type) {
		case string:
			n += 4 + len(v)
		case []byte:
			n += 4 + len(v)
		case amqp091.Table:
			n += tableSize(v)
		default:
			n += 8 // numbers, times, booleans
		}
	}
	return n
}

// fitsFrame refuses a message whose content header cannot fit a frame of
// frameMax bytes (0: no limit was negotiated).
func fitsFrame(p amqp091.Publishing, frameMax int) error {
	if frameMax <= 0 {
		return nil
	}
	if size := headerFrameSize(p); size > frameMax-frameOverhead {
		return fmt.Errorf("headers and properties of %d bytes exceed the broker's frame size (frame_max %d): the broker would close the connection (FRAME_ERROR)",
			size, frameMax)
	}
	return nil
}
