// Package egresswire is the header protocol of an egress stream, shared by the guest's egress proxies and the
// supervisor's egress server: the guest opens a side-channel stream, writes one Header frame (what it wants to
// reach), and reads one Reply frame (admitted or refused, with a reason) before any payload byte flows. It
// imports only the standard library so the guest stays small.
package egresswire
