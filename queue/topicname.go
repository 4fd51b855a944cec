package queue

import (
	"errors"
	"fmt"
	"strings"
)

// MaxTopicName is the longest topic name, in bytes.
const MaxTopicName = 100

// ErrBadTopicName is a topic name outside TopicNameRule.
var ErrBadTopicName = errors.New("bad topic name")

// TopicNameRule says which names CheckTopicName allows, for error messages.
const TopicNameRule = "a topic name is 1 to 100 bytes of ASCII letters, digits, '-', '_' and '.' (not only dots)"

// CheckTopicName refuses a name outside TopicNameRule. A topic name becomes
// part of Redis keys (inside a hash tag, so no braces), of environment
// variable names, of metric labels and of the console's URLs: a '/', '?',
// '#', '%' or "..", markup or white space would break one of them.
func CheckTopicName(name string) error {
	if name == "" || len(name) > MaxTopicName || strings.Trim(name, ".") == "" {
		return fmt.Errorf("%q: %s: %w", name, TopicNameRule, ErrBadTopicName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return fmt.Errorf("%q: %s: %w", name, TopicNameRule, ErrBadTopicName)
		}
	}
	return nil
}
