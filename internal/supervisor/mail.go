package supervisor

import (
	"context"

	"aicli.dev/aicli/controllers"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/mailbox"
	"aicli.dev/aicli/internal/mailbox/mailapi"
	"aicli.dev/aicli/internal/postoffice"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
)

// mailService is the supervisor's mailbox: the durable log with its inbox
// projection, the post office that sends under the agents' peer permissions
// (the API and the built-in mail tools both send through it), and the hook
// that tells the controllers an inbox changed.
type mailService struct {
	Mailbox *mailbox.Mailbox
	Office  *postoffice.Office
	// Changed is connected by controllers.Start (Options.MailChanged).
	Changed *controllers.ChangeHook
}

// startMail replays the mail log and serves the mail API on api.
func startMail(ctx context.Context, st *store.Store, api *apiserver.Server) (*mailService, error) {
	hook := &controllers.ChangeHook{}
	mb, err := mailbox.Open(ctx, st, mailbox.Options{Changed: hook.Fire})
	if err != nil {
		return nil, err
	}
	office := &postoffice.Office{Client: storeclient.New(st), Mailbox: mb}
	mailapi.Mount(api, office)
	return &mailService{Mailbox: mb, Office: office, Changed: hook}, nil
}
