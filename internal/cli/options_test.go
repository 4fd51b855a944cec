package cli

import (
	"reflect"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/forwarder"
)

// notConfigured are the forwarder's options that no variable sets: handed
// over as they are, derived (AllSlots from OWNERSHIP), or left to the
// forwarder's defaults.
var notConfigured = map[string]bool{
	"Queue": true, "Topics": true, "Metrics": true, "Log": true,
	"AllSlots": true, "BacklogInterval": true, "StrandedInterval": true,
	// Flow is per topic: the DELAYBRIDGE_TOPIC_<NAME>_RATE_LIMIT, _HOLD_QUEUE
	// and _HOLD_ABOVE of each configured topic (flowOf).
	"Flow": true,
	// Tracing comes from the standard OTEL_* variables (internal/tracing,
	// forwarderTracing), not from config.
	"Tracing": true,
	// RedisHint is what the outage log says of where Redis is looked for:
	// derived from the Redis variables (the address, the variable's name).
	"RedisHint": true,
	// HeartbeatQueue is Queue's Redis over a pool of its own
	// (redisclient.NewHeartbeat).
	"HeartbeatQueue": true,
}

// sharedFields are the forwarder options that config.Config holds under the
// same name and type.
func sharedFields(t *testing.T) []string {
	t.Helper()
	ot, ct := reflect.TypeFor[forwarder.Options](), reflect.TypeFor[config.Config]()
	var names []string
	for i := range ot.NumField() {
		f := ot.Field(i)
		if !f.IsExported() || notConfigured[f.Name] {
			continue
		}
		cf, ok := ct.FieldByName(f.Name)
		if !ok || cf.Type != f.Type {
			t.Errorf("forwarder.Options.%s has no config.Config field of its name and type: configure it or list it in notConfigured", f.Name)
			continue
		}
		names = append(names, f.Name)
	}
	return names
}

func TestForwarderOptionsCarryEveryConfiguredSetting(t *testing.T) {
	var cfg config.Config
	cv := reflect.ValueOf(&cfg).Elem()
	names := sharedFields(t)
	for i, name := range names {
		switch f := cv.FieldByName(name); f.Kind() {
		case reflect.String:
			f.SetString("value-of-" + name)
		case reflect.Int:
			f.SetInt(int64(1000 + i))
		case reflect.Int64: // time.Duration
			f.SetInt(int64(time.Duration(i+1) * 7 * time.Millisecond))
		default:
			t.Fatalf("config.Config.%s: kind %s not covered by this test", name, f.Kind())
		}
	}
	opts := reflect.ValueOf(forwarderOptions(cfg, nil, nil, nil, nil))
	for _, name := range names {
		if got, want := opts.FieldByName(name).Interface(), cv.FieldByName(name).Interface(); got != want {
			t.Errorf("forwarder option %s = %v, want the configured %v", name, got, want)
		}
	}
	for ownership, all := range map[string]bool{"rendezvous": false, "all": true} {
		cfg.Ownership = ownership
		if got := forwarderOptions(cfg, nil, nil, nil, nil).AllSlots; got != all {
			t.Errorf("OWNERSHIP=%s: AllSlots %v, want %v", ownership, got, all)
		}
	}
}

func TestConfigDefaultsAreTheForwardersDefaults(t *testing.T) {
	t.Setenv(config.Prefix+"_TOPICS", "orders")
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	opts := reflect.ValueOf(forwarderOptions(cfg, nil, nil, nil, nil))
	defaults := reflect.ValueOf(forwarder.Defaults())
	checked := 0
	for _, name := range sharedFields(t) {
		want := defaults.FieldByName(name)
		if want.IsZero() {
			continue // no default (KeyPrefix, ReplicaID): the configuration's own
		}
		checked++
		if got := opts.FieldByName(name).Interface(); got != want.Interface() {
			t.Errorf("%s: the configuration's default %v, the forwarder's %v", name, got, want.Interface())
		}
	}
	if checked < 12 {
		t.Errorf("compared %d defaults, want the 12 both define", checked)
	}
}
