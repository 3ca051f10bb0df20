// Package docker implements runtime.Runtime over the Docker Engine API with security defaults always applied:
// no network unless asked, no-new-privileges, all capabilities dropped but the few the guest needs, pids and memory
// limits, a read-only root filesystem with a tmpfs /tmp, and no injected init (the guest is PID 1).
package docker
