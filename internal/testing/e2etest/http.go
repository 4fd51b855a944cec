package e2etest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Get fetches http://addr+path and returns the status code and body.
func Get(ctx context.Context, addr, path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("get %s: %w", path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, "", fmt.Errorf("read %s: %w", path, err)
	}
	return res.StatusCode, string(b), nil
}

// Metric scrapes /metrics of the daemon at addr and returns the value of the
// sample of name whose labels include every label given as "k=v" (found is
// false when there is none).
func Metric(ctx context.Context, addr, name string, labels ...string) (value float64, found bool, err error) {
	code, body, err := Get(ctx, addr, "/metrics")
	if err != nil {
		return 0, false, err
	}
	if code != http.StatusOK {
		return 0, false, fmt.Errorf("/metrics answered %d", code)
	}
	want := make([]string, len(labels))
	for i, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		want[i] = k + `="` + v + `"`
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		head, val, ok := cutLast(line, " ")
		if !ok {
			continue
		}
		match := true
		for _, w := range want {
			if !strings.Contains(head, w) {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return 0, false, fmt.Errorf("parse %q: %w", line, err)
		}
		return v, true, nil
	}
	return 0, false, nil
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
