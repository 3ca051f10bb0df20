// Package supinfo serves the supervisor's info endpoint: its id, version, uptime, readiness and capacity (live
// conversations, its containers' CPU and memory, the disk of agent directories and guest images).
package supinfo
