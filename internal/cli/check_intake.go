package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/intake"
)

// checkIntake asks whether the queue an AMQP intake consumes exists: the
// intake declares nothing, so a misspelt INTAKE_QUEUE would leave the
// daemon consuming nothing. A missing queue names the variable to fix.
func checkIntake(ctx context.Context, cfg config.Config, t config.Topic) error {
	if t.Intake != "amqp" {
		return nil
	}
	tlsCfg, err := amqpTLS(cfg)
	if err != nil {
		return err
	}
	err = intake.CheckAMQPQueue(ctx, intake.AMQPConfig{URL: cfg.AMQP.URL, TLS: tlsCfg, Queue: t.IntakeQueue,
		Name: "delaybridge check " + t.Name})
	if errors.Is(err, intake.ErrNoQueue) {
		return fmt.Errorf("%w: declare it, or correct %s_TOPIC_%s_INTAKE_QUEUE", err, config.Prefix, config.VarName(t.Name))
	}
	return err
}
