package convapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/convapi/wire"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Resource plurals the handlers are mounted on.
const (
	agentsPlural        = "agents"
	conversationsPlural = "conversations"
)

// Store is the read side of the object store the handlers need. Writes go
// through the API server itself so that admission applies to them.
type Store interface {
	Get(ctx context.Context, resource, namespace, name string) (*unstructured.Unstructured, error)
	List(ctx context.Context, resource, namespace string, sel labels.Selector) (*unstructured.UnstructuredList, error)
}

// LivePTYs finds the remote AiCliPty of a running conversation by its uid.
type LivePTYs interface {
	PTY(uid string) (ptyapi.PTY, bool)
}

// Transcripts reads a conversation's committed, attributed transcript.
// Cursors start at 1; from is inclusive (0 and 1 both mean the beginning).
type Transcripts interface {
	// Read returns up to limit entries with Cursor >= from, oldest first.
	Read(ctx context.Context, uid string, from int64, limit int) ([]transcriptwire.Entry, error)
	// Last returns the cursor of the last committed entry (0: none). Cursors
	// are dense: entry n has cursor n.
	Last(ctx context.Context, uid string) (int64, error)
	// Subscribe delivers the entries with Cursor >= from, the committed
	// backlog first and then new ones as they are committed, until ctx ends.
	// The channel is closed when the subscription ends for any reason; the
	// caller resumes from one past the last cursor it saw.
	Subscribe(ctx context.Context, uid string, from int64) (<-chan transcriptwire.Entry, error)
}

// Attribution is told who is about to say what before a message is
// delivered, so the transcript pump can attribute the echo of that text to
// the right speaker instead of guessing.
type Attribution interface {
	Expect(uid, speaker, text string)
}

// Options configure the API.
type Options struct {
	// Store reads agents and conversations. Required.
	Store Store
	// Sessions finds live PTYs. Required.
	Sessions LivePTYs
	// Transcripts serves …/transcript; nil answers 503.
	Transcripts Transcripts
	// Attribution is told about every message before delivery; nil skips it.
	Attribution Attribution
	// Budget gates sends on the agents' budgets and serves agents/{name}/budget; nil runs without budgets.
	Budget Budget
	// Logger receives structured logs (default: discard).
	Logger *slog.Logger
}

// API is the set of conversation subresource handlers.
type API struct {
	opts Options
	log  *slog.Logger
	// startMu serialises start-or-continue so that two concurrent starts see
	// each other's conversation.
	startMu sync.Mutex
	// api is the API server's own handler, used to create conversations
	// through validation and admission.
	api http.Handler
}

// New returns the API; mount it with Register.
func New(opts Options) *API {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &API{opts: opts, log: log}
}

// Register mounts every handler on s: agents/{name}/start|budget and
// conversations/{name}/send|screen|attach|transcript.
func (a *API) Register(s *apiserver.Server) {
	a.api = s.Handler()
	s.HandleSubresource(agentsPlural, wire.SubStart, http.HandlerFunc(a.start))
	s.HandleSubresource(agentsPlural, wire.SubBudget, http.HandlerFunc(a.budgetHandler))
	s.HandleSubresource(conversationsPlural, wire.SubSend, http.HandlerFunc(a.send))
	s.HandleSubresource(conversationsPlural, wire.SubScreen, http.HandlerFunc(a.screen))
	s.HandleSubresource(conversationsPlural, wire.SubAttach, http.HandlerFunc(a.attach))
	s.HandleSubresource(conversationsPlural, wire.SubTranscript, http.HandlerFunc(a.transcript))
}

var (
	agentsGR        = v1alpha1.GroupVersion.WithResource(agentsPlural).GroupResource()
	conversationsGR = v1alpha1.GroupVersion.WithResource(conversationsPlural).GroupResource()
)

// target is a resolved subresource request.
type target struct {
	ns, name string
	obj      *unstructured.Unstructured
}

// resolve checks the method and path of a subresource request and reads the
// object it names. On failure it has already written the error.
func (a *API) resolve(w http.ResponseWriter, r *http.Request, method, plural string) (*target, bool) {
	parts, ok := apiserver.PathPartsFrom(r.Context())
	if !ok || parts.Rest != "" {
		apiserver.WriteError(w, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource(plural).GroupResource(), r.URL.Path))
		return nil, false
	}
	if r.Method != method {
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(
			v1alpha1.GroupVersion.WithResource(plural).GroupResource(), r.Method+" "+parts.Subresource))
		return nil, false
	}
	obj, err := a.opts.Store.Get(r.Context(), plural, parts.Namespace, parts.Name)
	if err != nil {
		apiserver.WriteError(w, err)
		return nil, false
	}
	return &target{ns: parts.Namespace, name: parts.Name, obj: obj}, true
}

// conversationError builds a Status error on conversation name whose message
// is exactly msg (no "Operation cannot be fulfilled" preamble), so that a
// client can print it as is.
func conversationError(code int32, reason metav1.StatusReason, name, msg string) error {
	return apiserver.StatusMessage(conversationsGR, code, reason, name, msg)
}
