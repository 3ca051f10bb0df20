package supinfo

import (
	"context"
	"net/http"
	"runtime/debug"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/supinfo/infowire"
)

// Defaults of Options' bounds.
const (
	DefaultStatsTimeout = 2 * time.Second
	DefaultStatsTTL     = 5 * time.Second
	DefaultDiskTimeout  = 10 * time.Second
	DefaultDiskTTL      = time.Minute
)

// Store lists conversations.
type Store interface {
	List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error)
}

// Containers lists and samples the supervisor's containers (the Docker runtime, or the fake in tests).
type Containers interface {
	List(ctx context.Context, labelSelector map[string]string) ([]runtime.ContainerState, error)
	runtime.StatsReader
}

// ImageLister returns the guest images built on the supervisor's engine.
type ImageLister func(ctx context.Context) ([]infowire.Image, error)

// Options configure a Service.
type Options struct {
	// SupervisorID is the supervisor's id; its containers carry it in runtime.LabelSupervisor. Required.
	SupervisorID string
	// Started is when the supervisor started. Required.
	Started time.Time
	// Ready reports readiness (nil: always ready).
	Ready func() bool
	// Store counts live conversations. Required.
	Store Store
	// Containers samples the containers; nil reports none.
	Containers Containers
	// Images lists the guest images; nil reports none.
	Images ImageLister
	// AgentsDir is <data dir>/agents, whose size is HomesBytes; "" skips it.
	AgentsDir string
	// StatsTimeout bounds one sampling of every container; StatsTTL is how long a sampling is reused.
	StatsTimeout, StatsTTL time.Duration
	// DiskTimeout bounds one disk measurement; DiskTTL is how long it is reused.
	DiskTimeout, DiskTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service answers GET /apis/aicli.dev/v1alpha1/info.
type Service struct {
	opts    Options
	version string
	stats   stats
	disk    disk
}

// New returns the service for opts.
func New(opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.StatsTimeout = cmpOr(opts.StatsTimeout, DefaultStatsTimeout)
	opts.StatsTTL = cmpOr(opts.StatsTTL, DefaultStatsTTL)
	opts.DiskTimeout = cmpOr(opts.DiskTimeout, DefaultDiskTimeout)
	opts.DiskTTL = cmpOr(opts.DiskTTL, DefaultDiskTTL)
	return &Service{opts: opts, version: Version(), stats: stats{prev: map[string]runtime.ContainerStats{}}}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Mount serves the endpoint on s for every authenticated caller, whatever its
// role: the reply is filtered to the caller's namespaces (Info).
func (s *Service) Mount(api *apiserver.Server) {
	api.Handle("GET "+apischema.APIPath+"/"+infowire.Resource, s)
}

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := apiserver.PrincipalFrom(r.Context())
	if !ok {
		apiserver.WriteError(w, apierrors.NewUnauthorized("unauthenticated request"))
		return
	}
	info, err := s.Info(r.Context(), p)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	apiserver.WriteJSON(w, http.StatusOK, info)
}

// Info assembles the reply for principal p: a caller bound to namespaces sees only their containers and no disk.
func (s *Service) Info(ctx context.Context, p *apiserver.Principal) (*infowire.Info, error) {
	now := s.opts.Now()
	info := &infowire.Info{SupervisorID: s.opts.SupervisorID, Version: s.version, StartTime: s.opts.Started.UTC(),
		UptimeSeconds: int64(now.Sub(s.opts.Started) / time.Second), Ready: s.opts.Ready == nil || s.opts.Ready(),
		Restricted: !p.AllNamespaces()}
	live, err := s.liveConversations(ctx)
	if err != nil {
		return nil, err
	}
	info.Capacity.LiveConversations = live
	sample := s.stats.get(ctx, &s.opts)
	info.Capacity.SampledAt, info.Capacity.StatsError = sample.at, sample.err
	info.Capacity.Containers = []infowire.Container{}
	for _, c := range sample.containers {
		if !p.Allowed(c.Namespace) {
			continue
		}
		info.Capacity.Containers = append(info.Capacity.Containers, c)
		info.Capacity.CPUPercent += c.CPUPercent
		info.Capacity.MemoryBytes += c.MemoryBytes
	}
	if p.AllNamespaces() {
		d := s.disk.get(ctx, &s.opts)
		info.Capacity.Disk = &d
	}
	return info, nil
}

// liveConversations counts conversations in state Active whose guest is connected.
func (s *Service) liveConversations(ctx context.Context) (int, error) {
	list, err := s.opts.Store.List(ctx, "conversations", "", labels.Everything())
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		o := &list.Items[i]
		state, _, _ := unstructured.NestedString(o.Object, "status", "state")
		if c, ok := client.FindCondition(o, v1alpha1.ConditionGuestConnected); ok && state == string(v1alpha1.ConversationActive) &&
			c.Status == metav1.ConditionTrue {
			n++
		}
	}
	return n, nil
}

// Version is the build's version: the main module's version when it was built from a module, else
// devel+<commit> (with -dirty for uncommitted changes) from the VCS stamp, else "devel".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.modified":
			if st.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel+" + rev[:min(len(rev), 12)] + dirty
}
