package mailapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/mailbox/mailwire"
	"aicli.dev/aicli/internal/postoffice"
)

const agentsPlural = "agents"

var agentsGR = v1alpha1.GroupVersion.WithResource(agentsPlural).GroupResource()

// maxSendRequest bounds a send's JSON body: the largest body with every byte
// escaped (\u00XX is 6 bytes) plus the other fields.
const maxSendRequest = 6*mailbox.MaxBodyBytes + 8<<10

// Mount serves the agents' mail, inbox and inbox/ack subresources on s. The
// API server authenticates the caller and requires it to be allowed in the
// namespace (the owner) before a handler runs.
func Mount(s *apiserver.Server, office *postoffice.Office) {
	h := &handler{office: office}
	s.HandleSubresource(agentsPlural, mailwire.SubMail, http.HandlerFunc(h.send))
	s.HandleSubresource(agentsPlural, mailwire.SubInbox, http.HandlerFunc(h.inbox))
}

type handler struct {
	office *postoffice.Office
}

// send is POST …/agents/{from}/mail.
func (h *handler) send(w http.ResponseWriter, r *http.Request) {
	p, _ := apiserver.PathPartsFrom(r.Context())
	if r.Method != http.MethodPost || p.Rest != "" {
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(agentsGR, r.Method+" "+p.Subresource))
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxSendRequest+1))
	if err != nil {
		apiserver.WriteError(w, apierrors.NewBadRequest("reading the request body: "+err.Error()))
		return
	}
	if len(raw) > maxSendRequest {
		apiserver.WriteError(w, tooLarge(p.Name))
		return
	}
	var req mailwire.SendRequest
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apiserver.WriteError(w, mailError(http.StatusBadRequest, metav1.StatusReasonBadRequest, p.Name,
			fmt.Sprintf(`mail from %s: the body must be {"to": "AGENT", "body": "TEXT"}: %v; nothing was sent`, p.Name, err)))
		return
	}
	if len(req.Body) > mailbox.MaxBodyBytes {
		apiserver.WriteError(w, tooLarge(p.Name))
		return
	}
	sent, err := h.office.Send(r.Context(), postoffice.Send{Namespace: p.Namespace, From: p.Name, To: req.To, Body: req.Body,
		ConversationContext: req.ConversationContext, IdempotencyKey: req.IdempotencyKey})
	if err != nil {
		apiserver.WriteError(w, sendError(p.Name, err))
		return
	}
	code := http.StatusCreated
	if sent.Replayed {
		code = http.StatusOK
	}
	apiserver.WriteJSON(w, code, mailwire.SendResponse{Seq: sent.Seq, Time: sent.Time, Replayed: sent.Replayed})
}

// sendError maps a refused send to its status; the message says what is
// wrong and that nothing was sent.
func sendError(from string, err error) error {
	var invalid *mailbox.ValidationError
	var noAgent *postoffice.NoSuchAgentError
	var denied *grants.PermissionError
	switch {
	case errors.As(err, &invalid):
		return mailError(http.StatusBadRequest, metav1.StatusReasonInvalid, from,
			fmt.Sprintf("mail from %s: %s %s; nothing was sent", from, invalid.Field, invalid.Reason))
	case errors.As(err, &noAgent):
		return mailError(http.StatusNotFound, metav1.StatusReasonNotFound, noAgent.Name, "mail from "+from+": "+noAgent.Error()+"; nothing was sent")
	case errors.As(err, &denied):
		return mailError(http.StatusForbidden, metav1.StatusReasonForbidden, from, denied.Error()+"; nothing was sent")
	case errors.Is(err, mailbox.ErrIdempotencyConflict):
		return mailError(http.StatusConflict, metav1.StatusReasonConflict, from,
			"mail from "+from+": the idempotency key was already used for a different message; nothing was sent")
	}
	return err
}

func tooLarge(from string) error {
	return mailError(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, from,
		fmt.Sprintf("mail from %s: body exceeds %d bytes (64 KiB), the limit of one message; nothing was sent", from, mailbox.MaxBodyBytes))
}

// inbox is GET …/agents/{name}/inbox and POST …/agents/{name}/inbox/ack.
func (h *handler) inbox(w http.ResponseWriter, r *http.Request) {
	p, _ := apiserver.PathPartsFrom(r.Context())
	switch {
	case p.Rest == "" && r.Method == http.MethodGet:
		h.list(w, r, p)
	case p.Rest == mailwire.InboxAck && r.Method == http.MethodPost:
		h.ack(w, r, p)
	default:
		apiserver.WriteError(w, apierrors.NewMethodNotSupported(agentsGR, r.Method+" "+strings.TrimSuffix(p.Subresource+"/"+p.Rest, "/")))
	}
}

func (h *handler) list(w http.ResponseWriter, r *http.Request, p apiserver.PathParts) {
	q := r.URL.Query()
	opts := mailbox.InboxOptions{Limit: mailwire.DefaultLimit}
	var err error
	if v := q.Get(mailwire.ParamUnread); v != "" {
		if opts.UnreadOnly, err = strconv.ParseBool(v); err != nil {
			apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("unread=%q: want true or false", v)))
			return
		}
	}
	if v := q.Get(mailwire.ParamAfter); v != "" {
		if opts.After, err = strconv.ParseUint(v, 10, 64); err != nil {
			apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("after=%q: want a sequence number", v)))
			return
		}
	}
	if v := q.Get(mailwire.ParamLimit); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > mailwire.MaxLimit {
			apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf("limit=%q: want 1 to %d", v, mailwire.MaxLimit)))
			return
		}
		opts.Limit = n
	}
	if err := h.exists(r, p); err != nil {
		apiserver.WriteError(w, err)
		return
	}
	ctx, mb := r.Context(), h.office.Mailbox
	page := opts
	page.Limit++ // one more tells whether a next page exists
	mails, err := mb.Inbox(ctx, p.Namespace, p.Name, page)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	out := mailwire.Inbox{Agent: p.Name, Items: make([]mailwire.Mail, 0, min(len(mails), opts.Limit))}
	if len(mails) > opts.Limit {
		mails = mails[:opts.Limit]
		out.Next = mails[len(mails)-1].Seq
	}
	for _, m := range mails {
		out.Items = append(out.Items, mailwire.Mail{Seq: m.Seq, Time: m.Time, From: m.From, To: m.To,
			ConversationContext: m.ConversationContext, Body: m.Body})
	}
	if out.ReadCursor, err = mb.Cursor(ctx, p.Namespace, p.Name); err == nil {
		out.Unread, err = mb.Unread(ctx, p.Namespace, p.Name)
	}
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	apiserver.WriteJSON(w, http.StatusOK, out)
}

func (h *handler) ack(w http.ResponseWriter, r *http.Request, p apiserver.PathParts) {
	var req mailwire.AckRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apiserver.WriteError(w, apierrors.NewBadRequest(fmt.Sprintf(`inbox ack of %s: the body must be {"upTo": SEQ}: %v`, p.Name, err)))
		return
	}
	if err := h.exists(r, p); err != nil {
		apiserver.WriteError(w, err)
		return
	}
	ctx, mb := r.Context(), h.office.Mailbox
	cur, err := mb.Ack(ctx, p.Namespace, p.Name, req.UpTo)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	unread, err := mb.Unread(ctx, p.Namespace, p.Name)
	if err != nil {
		apiserver.WriteError(w, err)
		return
	}
	apiserver.WriteJSON(w, http.StatusOK, mailwire.AckResponse{Agent: p.Name, ReadCursor: cur, Unread: unread})
}

// exists answers 404 for an inbox of an agent that does not exist.
func (h *handler) exists(r *http.Request, p apiserver.PathParts) error {
	if err := h.office.Client.Get(r.Context(), p.Namespace, p.Name, &v1alpha1.Agent{}); err != nil {
		if apierrors.IsNotFound(err) {
			return mailError(http.StatusNotFound, metav1.StatusReasonNotFound, p.Name,
				fmt.Sprintf("agent %q does not exist in namespace %q", p.Name, p.Namespace))
		}
		return err
	}
	return nil
}

func mailError(code int32, reason metav1.StatusReason, name, msg string) error {
	return apiserver.StatusMessage(agentsGR, code, reason, name, msg)
}
