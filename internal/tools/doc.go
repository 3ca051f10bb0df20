// Package tools is the supervisor's tool server (docs/decisions/0020): it serves the guest-opened side-channel
// streams of kind tool, asks an Authorizer whether the presenting conversation may make the call, runs the Grant's
// backend host-side (exec with Secret values in its environment, http with a Secret in a header), streams the
// scrubbed stdout and stderr back in guest/toolwire frames and ends with the exit code.
package tools
