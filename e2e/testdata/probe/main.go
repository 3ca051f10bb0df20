// Command probe is a tiny static test payload for the e2e suite: it reports what a container sees (network
// interfaces, capabilities, filesystem writability, identity) and exercises the privileges the guest daemon
// needs, without depending on the real guest binary.
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: probe print TEXT | serve | ignore-term | netifs | status | write PATH TEXT | setuid-child | alloc MiB | exit N | sleep")
	}
	switch os.Args[1] {
	case "print":
		fmt.Println(strings.Join(os.Args[2:], " "))
	case "serve":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		fmt.Println("ready")
		<-sigs
		fmt.Println("got SIGTERM")
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "sleep":
		time.Sleep(time.Hour)
	case "exit":
		code, _ := strconv.Atoi(os.Args[2])
		fmt.Println("exiting", code)
		os.Exit(code)
	case "netifs":
		ifs, err := net.Interfaces()
		if err != nil {
			fail("interfaces: %v", err)
		}
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		fmt.Println("netifs=" + strings.Join(names, ","))
	case "status":
		status()
	case "write":
		if len(os.Args) != 4 {
			fail("usage: probe write PATH TEXT")
		}
		if err := os.WriteFile(os.Args[2], []byte(os.Args[3]), 0o644); err != nil {
			fmt.Printf("write=%v\n", err)
			os.Exit(1)
		}
		fmt.Println("write=ok")
	case "setuid-child":
		setuidChild()
	case "alloc":
		mib, _ := strconv.Atoi(os.Args[2])
		fmt.Println("allocating", mib, "MiB")
		var keep [][]byte
		for i := 0; i < mib; i++ {
			b := make([]byte, 1<<20)
			for j := range b { // touch every page so it is resident
				b[j] = byte(j)
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated", len(keep), "MiB")
	default:
		fail("unknown command %q", os.Args[1])
	}
}

// status prints key=value lines the suite asserts on.
func status() {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fail("read status: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		for _, k := range []string{"CapEff:", "CapBnd:", "NoNewPrivs:", "Uid:"} {
			if strings.HasPrefix(l, k) {
				fmt.Printf("%s=%s\n", strings.TrimSuffix(k, ":"), strings.Join(strings.Fields(l[len(k):]), " "))
			}
		}
	}
	fmt.Printf("pid=%d\n", os.Getpid())
	for _, p := range []string{"/probe-write-test", "/tmp/probe-write-test"} {
		err := os.WriteFile(p, []byte("x"), 0o600)
		if err == nil {
			_ = os.Remove(p)
			fmt.Printf("write %s=ok\n", p)
		} else {
			fmt.Printf("write %s=%v\n", p, err)
		}
	}
}

// setuidChild does what the guest does as PID 1: start a child as uid/gid 1000 and later kill it.
func setuidChild() {
	cmd := exec.Command(os.Args[0], "sleep")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{1000}},
		Setpgid:    true,
	}
	if err := cmd.Start(); err != nil {
		fmt.Printf("spawn=%v\n", err)
		os.Exit(1)
	}
	fmt.Println("spawn=ok")
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		fmt.Printf("kill=%v\n", err)
		os.Exit(2)
	}
	_ = cmd.Wait()
	fmt.Println("kill=ok")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "probe: "+format+"\n", args...)
	os.Exit(1)
}
