package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"aicli.dev/aicli/guest/toolwire"
)

const usage = "usage: TOOL [ARGS…] | aicli-tool TOOL [ARGS…] | aicli-tool delegate PEER TOOL [--param k=v]… [--calls-per-hour N] [--ttl DURATION]"

// parse turns the invocation into a request: name is argv[0]'s base name.
func parse(name string, args []string) (toolwire.Request, error) {
	if name == self {
		if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
			return toolwire.Request{}, errors.New(usage)
		}
		if args[0] == "delegate" {
			return parseDelegate(args[1:])
		}
		name, args = args[0], args[1:]
	}
	if !toolwire.ValidToolName(name) {
		return toolwire.Request{}, fmt.Errorf("%q is not a tool name", name)
	}
	if len(args) == 1 && args[0] == "--help" {
		return toolwire.Request{Op: toolwire.OpHelp, Tool: name}, nil
	}
	return toolwire.Request{Op: toolwire.OpCall, Tool: name, Args: args}, nil
}

// parseDelegate parses `PEER TOOL [--param k=v]… [--calls-per-hour N] [--ttl DURATION]` (flags also as --f=v).
func parseDelegate(args []string) (toolwire.Request, error) {
	if len(args) < 2 {
		return toolwire.Request{}, errors.New(usage)
	}
	d := &toolwire.DelegateArgs{Peer: args[0]}
	req := toolwire.Request{Op: toolwire.OpDelegate, Tool: args[1], Delegate: d}
	if !toolwire.ValidToolName(req.Tool) {
		return req, fmt.Errorf("%q is not a tool name", req.Tool)
	}
	rest := args[2:]
	for len(rest) > 0 {
		flag, val, inline := strings.Cut(rest[0], "=")
		rest = rest[1:]
		if !inline {
			if len(rest) == 0 {
				return req, fmt.Errorf("%s needs a value", flag)
			}
			val, rest = rest[0], rest[1:]
		}
		switch flag {
		case "--param":
			k, v, ok := strings.Cut(val, "=")
			if !ok || k == "" {
				return req, fmt.Errorf("--param wants k=v, got %q", val)
			}
			if d.Params == nil {
				d.Params = map[string]string{}
			}
			d.Params[k] = v
		case "--calls-per-hour":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				return req, fmt.Errorf("--calls-per-hour wants a positive number, got %q", val)
			}
			d.CallsPerHour = n
		case "--ttl":
			if dur, err := time.ParseDuration(val); err != nil || dur <= 0 {
				return req, fmt.Errorf("--ttl wants a positive duration, got %q", val)
			}
			d.TTL = val
		default:
			return req, fmt.Errorf("unknown flag %q\n%s", flag, usage)
		}
	}
	return req, nil
}
