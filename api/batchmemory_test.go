package api

import (
	"bytes"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBatchOfManyEntriesIsRefusedAtTheCapInBoundedMemory: a 16 MiB body of
// {} entries (5.6 million of them) is refused with 413 batch_too_large once
// its 1,001st entry is read, quickly and without decoding the rest: the
// whole process allocates less than 64 MiB for it. Before, the body was
// decoded whole before the count was checked (1.8 GB).
func TestBatchOfManyEntriesIsRefusedAtTheCapInBoundedMemory(t *testing.T) {
	f := newBigFixture(t)
	body := []byte(`{"messages":[` + strings.Repeat(`{},`, (16<<20)/3-10) + `{}]}`)
	req, err := http.NewRequest("POST", f.base+"/v1/topics/orders/messages:batch", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fullToken)
	req.Header.Set("Content-Type", "application/json")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	began := time.Now()
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	took := time.Since(began)
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("the request allocated %d MiB, want under 64", alloc>>20)
	}
	if took > 10*time.Second {
		t.Errorf("refused after %s, want quickly", took)
	}
}
