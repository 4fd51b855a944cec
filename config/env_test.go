package config

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// setEnv gives the test exactly these DELAYBRIDGE_* variables (names without
// the prefix): every other one, except DELAYBRIDGE_TEST_*, is unset until
// the test ends. Tests using it cannot run in parallel (t.Setenv).
func setEnv(t *testing.T, vars map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, Prefix+"_") && !strings.HasPrefix(name, Prefix+"_TEST_") {
			t.Setenv(name, "") // restores the old value at cleanup
			os.Unsetenv(name)
		}
	}
	for k, v := range vars {
		t.Setenv(Prefix+"_"+k, v)
	}
}

// fieldErrors flattens Load's joined error into its *FieldErrors; any other
// error fails the test.
func fieldErrors(t testing.TB, err error) []*FieldError {
	t.Helper()
	var out []*FieldError
	for _, e := range leaves(err) {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %q (%T) is not a *FieldError", e, e)
		}
		out = append(out, fe)
	}
	return out
}

// leaves unwraps errors.Join trees into their parts.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// varsNamed returns the sorted, distinct variables named by err.
func varsNamed(t testing.TB, err error) []string {
	t.Helper()
	var names []string
	for _, fe := range fieldErrors(t, err) {
		names = append(names, fe.Var)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
