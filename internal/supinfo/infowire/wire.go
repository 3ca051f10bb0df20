// Package infowire holds the reply of the supervisor's info endpoint
// (GET /apis/aicli.dev/v1alpha1/info), shared by the server (supinfo) and its
// clients (aictl, consoles) without pulling the server into them.
package infowire

import (
	"fmt"
	"time"
)

// Resource is the endpoint's last path segment under /apis/aicli.dev/v1alpha1.
const Resource = "info"

// Info is one supervisor's identity, health and capacity.
type Info struct {
	// SupervisorID is the supervisor's stable id (sup-…), the value of its containers' aicli.dev/supervisor label.
	SupervisorID string `json:"supervisorID"`
	// Version is the build's version: the module version, or devel+<commit>[-dirty] for a source build.
	Version string `json:"version"`
	// StartTime is when the supervisor process started serving.
	StartTime time.Time `json:"startTime"`
	// UptimeSeconds is the time since StartTime, in whole seconds.
	UptimeSeconds int64 `json:"uptimeSeconds"`
	// Ready is what /readyz says: the supervisor serves requests.
	Ready bool `json:"ready"`
	// Restricted is true when the caller's token is bound to some namespaces: Containers then lists only theirs
	// (and the CPU and memory totals sum only those), and Disk is omitted.
	Restricted bool `json:"restricted,omitempty"`
	// Capacity is what the supervisor runs and uses.
	Capacity Capacity `json:"capacity"`
}

// Capacity is the load of one supervisor.
type Capacity struct {
	// LiveConversations counts conversations in state Active with a connected guest, in every namespace.
	LiveConversations int `json:"liveConversations"`
	// Containers are the supervisor's running containers with their latest sample.
	Containers []Container `json:"containers"`
	// CPUPercent is the sum of Containers' CPUPercent (100 is one core).
	CPUPercent float64 `json:"cpuPercent"`
	// MemoryBytes is the sum of Containers' MemoryBytes.
	MemoryBytes int64 `json:"memoryBytes"`
	// SampledAt is when the container samples were taken; they are cached for a few seconds.
	SampledAt time.Time `json:"sampledAt"`
	// StatsError says why container samples are missing or partial (the engine unreachable, a timeout).
	StatsError string `json:"statsError,omitempty"`
	// Disk is the disk use of the agents' directories and the guest images (only for callers of every namespace).
	Disk *Disk `json:"disk,omitempty"`
}

// Container is one running container of the supervisor.
type Container struct {
	// Name is the container name.
	Name string `json:"name"`
	// Namespace, Agent and Conversation come from the container's labels.
	Namespace    string `json:"namespace"`
	Agent        string `json:"agent"`
	Conversation string `json:"conversation"`
	// CPUPercent is the CPU use since the previous sample (the first one: since the container started); 100 is one core.
	CPUPercent float64 `json:"cpuPercent"`
	// MemoryBytes is the memory in use without the reclaimable page cache.
	MemoryBytes int64 `json:"memoryBytes"`
	// Error says why this container has no sample.
	Error string `json:"error,omitempty"`
}

// Disk is the disk use under the supervisor's data directory and of its guest images.
type Disk struct {
	// HomesBytes is the apparent size of every file under <data dir>/agents (agent homes and workspaces).
	HomesBytes int64 `json:"homesBytes"`
	// ImagesBytes is the sum of Images' sizes.
	ImagesBytes int64 `json:"imagesBytes"`
	// Images are the guest images built on this supervisor's engine.
	Images []Image `json:"images"`
	// MeasuredAt is when the sizes were measured; they are cached for a minute.
	MeasuredAt time.Time `json:"measuredAt"`
	// Error says why a size is missing or partial.
	Error string `json:"error,omitempty"`
}

// Image is one guest image.
type Image struct {
	// Ref is the image's tag.
	Ref string `json:"ref"`
	// Harness is the CLI the image is for.
	Harness string `json:"harness"`
	// SizeBytes is the image's size on the engine (layers shared with other images counted in each).
	SizeBytes int64 `json:"sizeBytes"`
}

// FormatBytes prints n in binary units ("1.5 GiB"), as the consoles and aictl show sizes.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
