package amqp

import (
	"strings"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/sinks"
)

// publishing is the AMQP message for m: persistent, with the stable id as
// MessageId and the delaybridge headers after the envelope's own, so an
// envelope cannot forge them. headers is cleared and filled for m; it may be
// reused once the message is published. The envelope's properties are
// published as they were taken in (see sinks.Properties); a content type
// among them wins over a content-type header, and a timestamp among them
// over the publish time.
func publishing(m sinks.Message, now time.Time, headers amqp091.Table) amqp091.Publishing {
	clear(headers)
	var contentType string
	for k, v := range m.Headers {
		headers[k] = v
		if strings.EqualFold(k, "content-type") {
			contentType = v
		}
	}
	headers[sinks.HeaderID] = m.ID
	headers[sinks.HeaderTopic] = m.Topic
	headers[sinks.HeaderDue] = m.DueMillis()
	headers[sinks.HeaderAttempt] = int64(m.Attempt)
	if m.Key != "" {
		headers[sinks.HeaderKey] = m.Key
	}
	p := m.Properties
	if p.ContentType != "" {
		contentType = p.ContentType
	}
	if p.Timestamp != 0 {
		now = time.Unix(p.Timestamp, 0)
	}
	return amqp091.Publishing{
		Headers:         headers,
		ContentType:     contentType,
		ContentEncoding: p.ContentEncoding,
		DeliveryMode:    amqp091.Persistent,
		Priority:        p.Priority,
		CorrelationId:   p.CorrelationID,
		ReplyTo:         p.ReplyTo,
		Expiration:      p.Expiration,
		MessageId:       m.ID,
		Timestamp:       now,
		Type:            p.Type,
		AppId:           p.AppID,
		Body:            m.Body,
	}
}
