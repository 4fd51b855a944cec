package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/queue"
)

// durableQueue is q waiting, on every acceptance path, for what
// DELAYBRIDGE_REDIS_WAIT_* ask (see queue.WithDurability), counting the
// writes it could not confirm in delaybridge_acceptance_unconfirmed_total
// under path. reg nil: no metric.
func durableQueue(q *queue.Queue, cfg config.Config, reg prometheus.Registerer, path string) *queue.Queue {
	d := cfg.RedisWait.Durability()
	if reg != nil {
		c := unconfirmedCounter(reg).WithLabelValues(path)
		d.Unconfirmed = func(n int) { c.Add(float64(n)) }
	}
	return q.WithDurability(d)
}

// unconfirmedCounter registers delaybridge_acceptance_unconfirmed_total on
// reg, or returns the one the API or the intakes registered first.
func unconfirmedCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "delaybridge_acceptance_unconfirmed_total",
		Help: "Schedules not acknowledged because DELAYBRIDGE_REDIS_WAIT_REPLICAS (or _WAIT_AOF) was not confirmed, or too few replicas were connected, by path (api, intake).",
	}, []string{"path"})
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c // registered now, or (another collector of that name) counting unseen
}

// acceptanceErr is why acceptance stops (too few replicas connected), for
// /readyz; nil when it goes on or q waits for no replica (q nil too).
func acceptanceErr(ctx context.Context, q *queue.Queue) error {
	if q == nil {
		return nil
	}
	if err := q.Acceptance(ctx).Err; err != nil {
		return fmt.Errorf("acceptance: %w", opstext.Wrap(err))
	}
	return nil
}
