package main

import (
	"os"
	"testing"
)

func TestResidentMemoryReadsProcStatus(t *testing.T) {
	anon, file, err := residentMemory("Name:\taicli-supervisor\nVmRSS:\t  127908 kB\nRssAnon:\t   72112 kB\nRssFile:\t   55796 kB\nRssShmem:\t       0 kB\n")
	if err != nil || anon != 72112*1024 || file != 55796*1024 {
		t.Fatalf("residentMemory = %v, %v, %v", anon, file, err)
	}
	if _, _, err := residentMemory("Name:\tx\nVmRSS:\t 1 kB\n"); err == nil {
		t.Fatal("a status without RssAnon and RssFile was accepted")
	}
	// This process's own status parses too.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if anon, _, err := residentMemory(string(status)); err != nil || anon <= 0 {
		t.Fatalf("own status: %v, %v", anon, err)
	}
}
