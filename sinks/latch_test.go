package sinks

import (
	"testing"
	"time"
)

func TestLatchRefusesCallsAfterShutAndWaitsForThoseUnderWay(t *testing.T) {
	var g Latch
	if !g.Enter() {
		t.Fatal("a new latch refused a call")
	}
	if !g.Shut() {
		t.Fatal("the first Shut reported the latch shut already")
	}
	if g.Shut() {
		t.Error("a second Shut reported it shut the gate")
	}
	if g.Enter() {
		t.Error("a call entered after Shut")
	}
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while a call was under way")
	case <-time.After(50 * time.Millisecond):
	}
	g.Leave()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the call left")
	}
}
