package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/delaybridge/delaybridge/queue"
)

// Every command that acts on one message (get, cancel, reschedule) names it
// the same three ways: --id, --member, --member-file. On an envelope topic
// --id is the envelope's id (found through the index); on a raw topic it is
// the id delaybridge prints and delivers (MessageID of the member), found by
// a bounded scan of every slot (queue.MaxFindScan members per slot).

// memberHelp is the part of each command's usage that says so.
const memberHelp = `The message is named by one of:
  --id ID            an envelope's id; on a raw topic, the id schedule prints
                     and deliveries carry, found by a scan of each slot
                     (bounded: at most 200000 members a slot)
  --member MEMBER    the member itself, byte for byte
  --member-file FILE the member read from FILE ("-": standard input)
`

// memberFlags are the flags that name one message.
type memberFlags struct {
	id, member, file *string
}

func addMemberFlags(fs *flag.FlagSet) memberFlags {
	return memberFlags{
		id:     fs.String("id", "", "the message `id` (envelope id; on a raw topic found by a bounded scan)"),
		member: fs.String("member", "", "the `member`, byte for byte"),
		file:   fs.String("member-file", "", "read the member from `FILE` (\"-\": standard input)"),
	}
}

// given counts the ways used; extra is a positional MEMBER (cancel and
// reschedule keep accepting one), "" for none.
func (m memberFlags) check(extra bool) error {
	n := boolInt(*m.id != "") + boolInt(*m.member != "") + boolInt(*m.file != "") + boolInt(extra)
	if n != 1 {
		return fmt.Errorf("name the message with exactly one of --id, --member or --member-file")
	}
	return nil
}

// positionalMember is the MEMBER argument after TOPIC, nil when none.
func positionalMember(pos []string) *string {
	if len(pos) == 2 {
		return &pos[1]
	}
	return nil
}

// ref resolves the flags (or the positional member) to a reference: by id
// on an envelope topic, else by member, reading the file or scanning for
// the raw id.
func (m memberFlags) ref(ctx context.Context, c *cli, t queue.Topic, positional *string) (queue.Ref, error) {
	switch {
	case *m.member != "":
		return queue.ByMember([]byte(*m.member)), nil
	case *m.file != "":
		b, err := readMemberFile(c.s, *m.file)
		if err != nil {
			return queue.Ref{}, fmt.Errorf("%w: %w", errUsage, err)
		}
		return queue.ByMember(b), nil
	case positional != nil:
		b, err := readInput(c.s, *positional, true)
		return queue.ByMember(b), err
	case t.Format == queue.FormatEnvelope:
		return queue.ByID(*m.id), nil
	}
	member, err := findRawID(ctx, c.q, t, *m.id)
	return queue.ByMember(member), err
}

// findRawID finds the member of a raw topic whose message id is id, by a
// bounded scan of each slot. Not found, the error says how else to name it.
func findRawID(ctx context.Context, q *queue.Queue, t queue.Topic, id string) ([]byte, error) {
	limited := false
	for slot := range t.SlotCount() {
		e, err := q.FindMessageID(ctx, t, slot, id)
		switch {
		case err == nil:
			return []byte(e.Member), nil
		case errors.Is(err, queue.ErrScanLimit):
			limited = true
		case !errors.Is(err, queue.ErrNotFound):
			return nil, err
		}
	}
	how := "every slot scanned"
	if limited {
		how = fmt.Sprintf("scanned the first %d members of each slot", queue.MaxFindScan)
	}
	return nil, fmt.Errorf("no message with id %s on raw topic %s (%s): name it by its bytes with --member or --member-file: %w",
		id, t.Name, how, queue.ErrNotFound)
}
