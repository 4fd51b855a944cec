package cli

import (
	"cmp"
	"context"
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Build is what the binary was built from: cmd/delaybridge's variables,
// which `make build`, scripts/build-static.sh and the release workflow stamp
// (-ldflags "-X main.version=0.2.0 -X main.commit=… -X main.date=…", the
// version from the repository's VERSION file). An empty field reads "dev"
// (the version) or "unknown".
type Build struct {
	Version, Commit, Date string
}

// buildInfo is what this binary was built from.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goversion"`
}

func (b Build) info() buildInfo {
	return buildInfo{
		Version:   cmp.Or(b.Version, "dev"),
		Commit:    cmp.Or(b.Commit, "unknown"),
		Date:      cmp.Or(b.Date, "unknown"),
		GoVersion: runtime.Version(),
	}
}

// collector is the gauge delaybridge_build_info{version,commit,goversion},
// always 1: joined on the instance, it tells a dashboard which build every
// replica runs (say, halfway through a rolling upgrade).
func (b buildInfo) collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "delaybridge_build_info",
		Help: "Always 1; the labels name the build of this replica.",
		ConstLabels: prometheus.Labels{
			"version":   b.Version,
			"commit":    b.Commit,
			"goversion": b.GoVersion,
		},
	})
	g.Set(1)
	return g
}

const versionUsage = `usage: delaybridge version [--json]

Prints the release this binary was built from (the repository's VERSION file;
the commit tells builds of one release apart). With --json:
{"version", "commit", "date", "goversion"}.
`

// runVersion is `delaybridge version`.
func runVersion(_ context.Context, args []string, s stdio) int {
	fs := newFlags("version", versionUsage, s)
	asJSON := fs.Bool("json", false, "print version, commit, build date and Go version as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return badUsage(fs, s, "unexpected argument %q", pos[0])
	}
	if *asJSON {
		if err := writeJSON(s.out, s.build.info()); err != nil {
			return exitFail
		}
		return exitOK
	}
	fmt.Fprintln(s.out, s.build.info().Version)
	return exitOK
}
