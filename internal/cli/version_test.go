package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// stamped is a build as -ldflags -X stamps cmd/delaybridge's variables.
var stamped = Build{Version: "v0.1.0", Commit: "0123456789ab", Date: "2026-11-23T20:00:00Z"}

func runVersionCmd(t *testing.T, b Build, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), append([]string{"version"}, args...), stdio{in: strings.NewReader(""), out: &out, err: &errb, build: b})
	return code, out.String(), errb.String()
}

func TestVersionPrintsTheTag(t *testing.T) {
	code, out, errs := runVersionCmd(t, stamped)
	if code != exitOK || out != "v0.1.0\n" || errs != "" {
		t.Fatalf("delaybridge version: code %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, "v0.1.0\n")
	}
}

func TestVersionJSONNamesTheBuild(t *testing.T) {
	code, out, errs := runVersionCmd(t, stamped, "--json")
	if code != exitOK || errs != "" {
		t.Fatalf("delaybridge version --json: code %d, stderr %q", code, errs)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var got buildInfo
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("not the JSON of a build: %v\n%s", err, out)
	}
	want := buildInfo{Version: "v0.1.0", Commit: "0123456789ab", Date: "2026-11-23T20:00:00Z", GoVersion: runtime.Version()}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, key := range []string{`"version"`, `"commit"`, `"date"`, `"goversion"`} {
		if !strings.Contains(out, key) {
			t.Errorf("no key %s in %s", key, out)
		}
	}
}

func TestVersionRefusesArguments(t *testing.T) {
	if code, _, _ := runVersionCmd(t, stamped, "extra"); code != exitConfig {
		t.Errorf("delaybridge version extra: code %d, want %d", code, exitConfig)
	}
	if code, _, _ := runVersionCmd(t, stamped, "--jsn"); code != exitConfig {
		t.Errorf("delaybridge version --jsn: code %d, want %d", code, exitConfig)
	}
}

// TestVersionBuildInfoMetric: the registry the daemon serves on /metrics
// carries delaybridge_build_info with the stamped labels, value 1.
func TestVersionBuildInfoMetric(t *testing.T) {
	srv := httptest.NewServer(routes(newRegistry(stamped), nil, nil, nil, nil, nil, nil))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := `delaybridge_build_info{commit="0123456789ab",goversion="` + runtime.Version() + `",version="v0.1.0"} 1`
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want+"\n") {
		t.Errorf("GET /metrics: status %d, want a line %s in:\n%s", res.StatusCode, want, body)
	}
}
