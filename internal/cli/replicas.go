package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

const replicasUsage = `usage: delaybridge replicas [flags] [TOPIC...]

Lists the live replicas (those whose heartbeat has not expired by Redis's
clock), how long ago each last beat, and the slots of every configured topic
(or the named ones) each owns: the same rendezvous assignment the daemons
compute, a topic's slots shared among the live replicas that forward it
("not run" where a replica's DELAYBRIDGE_TOPICS lacks the topic; a replica
that has not reported its topics counts as running every one). With
DELAYBRIDGE_OWNERSHIP=all every replica scans every slot instead. Below the table, a line per topic with flow
control: the limits in force and, while a replica holds it, why.

Examples:
  delaybridge replicas
  delaybridge replicas orders --json
`

// runReplicas is `delaybridge replicas`.
func runReplicas(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("replicas", replicasUsage, s)
	asJSON := fs.Bool("json", false, "print JSON")
	names, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	c, topics, code := openTopics(fs, s, names)
	if c == nil {
		return code
	}
	defer c.close()
	set, err := membership.New(c.q).Replicas(ctx, c.cfg.KeyPrefix)
	if err != nil {
		return c.fail(err)
	}
	fw, err := membership.New(c.q).Forwarding(ctx, c.cfg.KeyPrefix)
	if err != nil {
		return c.fail(err)
	}
	rows := replicaRows(set, fw, topics, c.cfg.HeartbeatTTL, c.cfg.Ownership == "all")
	limits, err := c.limitsInForce(ctx, topics)
	var held []heldJSON
	if err == nil {
		held, err = c.heldNow(ctx, topics)
	}
	if err != nil {
		return c.fail(err)
	}
	unf := map[string]string{}
	for _, t := range topics {
		if w := opstext.Unforwarded(fw, t.Name); w != "" {
			unf[t.Name] = w
		}
	}
	if *asJSON {
		addEnvLimits(rows, topics, limits)
		flow := make([]map[string]any, len(topics))
		for i, t := range topics {
			flow[i] = map[string]any{"topic": t.Name, "limits": limits[i], "held": held[i]}
			if unf[t.Name] != "" {
				flow[i]["unforwarded"] = unf[t.Name]
			}
		}
		err = writeJSON(s.out, map[string]any{"time": jsonTime(set.Now), "replicas": rows, "topics": flow})
	} else if err = printReplicas(s.out, topics, rows); err == nil {
		printUnforwarded(s.out, topics, unf)
		printLimits(s.out, topics, limits, held)
	}
	if err != nil {
		return c.fail(fmt.Errorf("write replicas: %w", err))
	}
	return exitOK
}

// replicaRow is one live replica.
type replicaRow struct {
	ID             string  `json:"id"`
	Deadline       *string `json:"deadline"`
	HeartbeatAgeMS int64   `json:"heartbeat_age_ms"`
	ExpiresInMS    int64   `json:"expires_in_ms"`
	// Owned are the slots of each topic the replica forwards; a topic it
	// does not run (not in its DELAYBRIDGE_TOPICS) is absent.
	Owned map[string][]int `json:"owned"`
	// Env are the limits the replica reports its environment gives each
	// topic it serves, by topic.
	Env map[string]flowstate.ReplicaLimits `json:"environment_limits,omitempty"`
}

// addEnvLimits gives each row the limits its replica reports for topics.
func addEnvLimits(rows []replicaRow, topics []queue.Topic, limits []limitsJSON) {
	for i := range rows {
		for j, t := range topics {
			for _, r := range limits[j].Replicas {
				if r.Replica != rows[i].ID {
					continue
				}
				if rows[i].Env == nil {
					rows[i].Env = map[string]flowstate.ReplicaLimits{}
				}
				rows[i].Env[t.Name] = r
			}
		}
	}
}

// replicaRows gives each live replica the slots it owns of each topic it
// forwards, shared among those that forward it (membership.Forwarding.Owned). A
// heartbeat sets the deadline to beat + ttl, so its age is now - (deadline -
// ttl) by Redis's clock.
func replicaRows(set membership.ReplicaSet, fw membership.Forwarding, topics []queue.Topic, ttl time.Duration, all bool) []replicaRow {
	fw.Live = set.Live
	owned := fw.Owned(topics, all)
	rows := make([]replicaRow, len(set.Live))
	for i, id := range set.Live {
		d := set.Deadlines[id]
		rows[i] = replicaRow{ID: id, Deadline: jsonTime(d), Owned: owned[i],
			HeartbeatAgeMS: max(set.Now.Sub(d.Add(-ttl)), 0).Milliseconds(), ExpiresInMS: d.Sub(set.Now).Milliseconds()}
	}
	return rows
}

func printReplicas(w io.Writer, topics []queue.Topic, rows []replicaRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no live replicas: no daemon is forwarding (or none reaches this Redis and key prefix)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "REPLICA\tLAST BEAT\tEXPIRES IN")
	for _, t := range topics {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(t.Name))
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s ago\t%s", printable([]byte(r.ID), 64),
			shortDuration(time.Duration(r.HeartbeatAgeMS)*time.Millisecond), shortDuration(time.Duration(r.ExpiresInMS)*time.Millisecond))
		for _, t := range topics {
			slots, ok := r.Owned[t.Name]
			if !ok {
				fmt.Fprint(tw, "\tnot run")
				continue
			}
			fmt.Fprintf(tw, "\t%s", slotList(slots, t.SlotCount()))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// slotList prints owned slots as "3/8: 0,2,5" (count of total, then which).
func slotList(slots []int, total int) string {
	parts := make([]string, len(slots))
	for i, s := range slots {
		parts[i] = fmt.Sprint(s)
	}
	list := strings.Join(parts, ",")
	if list == "" {
		list = "-"
	}
	return fmt.Sprintf("%d/%d: %s", len(slots), total, list)
}
