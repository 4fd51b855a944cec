package intake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/queue"
)

// deliveryItem turns an AMQP delivery into the message to schedule: body,
// routing key, headers (x-delay and delaybridge's own left out) and
// properties as they came, due when x-delaybridge-due or x-delay says; an
// x-delay counts from received, when the intake took the delivery in.
func (t Target) deliveryItem(d amqp091.Delivery, received time.Time) item {
	it := item{msg: queue.Message{
		ID:         deliveryID(d),
		Body:       d.Body,
		Properties: deliveryProperties(d),
	}}
	if !t.OwnRoutingKey {
		it.msg.RoutingKey = d.RoutingKey
	}
	if v, ok := d.Headers[HeaderKey]; ok {
		if s, err := headerText(v); err != nil {
			it.reject(ReasonInvalid, "header %s: %v", HeaderKey, err)
		} else {
			it.msg.Key = s
		}
	}
	for name, v := range d.Headers {
		if name == HeaderDelay || strings.HasPrefix(strings.ToLower(name), queue.ReservedHeaderPrefix) {
			continue
		}
		s, err := headerText(v)
		if err != nil {
			it.reject(ReasonInvalid, "header %q: %v", name, err)
			continue
		}
		if it.msg.Headers == nil {
			it.msg.Headers = map[string]string{}
		}
		it.msg.Headers[name] = s
	}
	var err error
	if v, ok := d.Headers[HeaderDue]; ok {
		if it.when, err = dueAt(v); err != nil {
			it.reject(ReasonBadDue, "header %s: %v", HeaderDue, err)
		}
	} else if v, ok := d.Headers[HeaderDelay]; ok {
		if it.when, err = delayFrom(v, time.Time{}, received); err != nil {
			it.reject(ReasonBadDelay, "header %s: %v", HeaderDelay, err)
		}
	}
	return it
}

// deliveryID is the message id when it can name an envelope and is not of
// the form reserved for generated ids, else "~amqp:" and the hex SHA-256 of
// body, routing key and every header (JSON with sorted keys), so a
// redelivered message has the id it had the first time, and no producer can
// give its own message that id first (queue.IntakeID).
func deliveryID(d amqp091.Delivery) string {
	if ownID(d.MessageId) {
		return d.MessageId
	}
	canon, _ := json.Marshal(struct {
		Body       []byte         `json:"body"`
		RoutingKey string         `json:"routing_key"`
		Headers    map[string]any `json:"headers"`
	}{d.Body, d.RoutingKey, plainTable(d.Headers)})
	sum := sha256.Sum256(canon)
	return queue.IntakeID("amqp", hex.EncodeToString(sum[:]))
}

// ownID reports whether a producer's id (an AMQP message-id, a Kafka
// x-delaybridge-id header) can name its message: a valid id not of the form
// reserved for the ids intakes generate.
func ownID(id string) bool {
	return queue.CheckID(id) == nil && !queue.IsIntakeID(id)
}

func deliveryProperties(d amqp091.Delivery) queue.Properties {
	p := queue.Properties{
		ContentType:     d.ContentType,
		ContentEncoding: d.ContentEncoding,
		CorrelationID:   d.CorrelationId,
		ReplyTo:         d.ReplyTo,
		Expiration:      d.Expiration,
		Type:            d.Type,
		AppID:           d.AppId,
		Priority:        d.Priority,
	}
	if !d.Timestamp.IsZero() && d.Timestamp.Unix() > 0 {
		p.Timestamp = d.Timestamp.Unix()
	}
	return p
}

// headerText is an AMQP header value as envelope text: strings as they
// are, numbers and booleans in decimal, a timestamp in RFC 3339, a table or
// array as JSON.
func headerText(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		if !utf8.ValidString(x) {
			return "", fmt.Errorf("not valid UTF-8")
		}
		return x, nil
	case []byte:
		if !utf8.Valid(x) {
			return "", fmt.Errorf("binary value (not UTF-8)")
		}
		return string(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339), nil
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), nil
	case amqp091.Decimal:
		return decimalText(x), nil
	default:
		b, err := json.Marshal(plainValue(v))
		if err != nil {
			return "", fmt.Errorf("a %T cannot be written as text: %w", v, err)
		}
		return string(b), nil
	}
}

func decimalText(d amqp091.Decimal) string {
	s := strconv.FormatInt(int64(d.Value), 10)
	if d.Scale == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= int(d.Scale) {
		s = "0" + s
	}
	s = s[:len(s)-int(d.Scale)] + "." + s[len(s)-int(d.Scale):]
	if neg {
		s = "-" + s
	}
	return s
}

// plainTable is t with nested tables as maps, so encoding/json writes it
// with sorted keys.
func plainTable(t amqp091.Table) map[string]any {
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = plainValue(v)
	}
	return out
}

func plainValue(v any) any {
	switch x := v.(type) {
	case amqp091.Table:
		return plainTable(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainValue(e)
		}
		return out
	case amqp091.Decimal:
		return decimalText(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	default:
		return v
	}
}
