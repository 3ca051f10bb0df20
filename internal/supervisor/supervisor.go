package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/controllers"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/images"
	"aicli.dev/aicli/internal/admission"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/budget"
	"aicli.dev/aicli/internal/builtins"
	"aicli.dev/aicli/internal/convapi"
	"aicli.dev/aicli/internal/egress"
	"aicli.dev/aicli/internal/gateway"
	"aicli.dev/aicli/internal/imagebuild"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/liveguest"
	"aicli.dev/aicli/internal/monitor/remote"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/runtime/docker"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/secrets/secretapi"
	"aicli.dev/aicli/internal/spend/spendapi"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/supinfo"
	"aicli.dev/aicli/internal/supinfo/infowire"
	"aicli.dev/aicli/internal/toolcalls/toolcallapi"
	"aicli.dev/aicli/internal/transcript"
)

// Config is the supervisor's command-line configuration.
type Config struct {
	// DataDir holds the store, sockets, keys and agents' durable directories.
	DataDir string
	// Socket is the admin unix socket; default <DataDir>/supervisor.sock.
	Socket string
	// Listen, when set, also serves the API on TCP with TLS and bearer tokens.
	Listen string
	// TLSCert and TLSKey name the TCP listener's certificate; when empty a
	// self-signed one is created under <DataDir>/tls.
	TLSCert, TLSKey string
	// TokensFile lists the TCP API's bearer tokens; default <DataDir>/tokens.yaml.
	TokensFile string
	Logger     *slog.Logger
	// Ready, when set, is called once the supervisor serves requests.
	Ready func(*Supervisor)
	// ArtifactDir holds the guest binaries the image definitions copy
	// (aicli-guest, aicli-fake-cli) and aicli-tool, which is mounted into
	// conversations; default: the supervisor's own directory.
	ArtifactDir string
	// LeaseTTL is the lifetime of a capability token, renewed every third of it
	// while the conversation's container lives (default 60s).
	LeaseTTL time.Duration
	// ReapInterval is the orphan-container sweep period (default 1m).
	ReapInterval time.Duration
	// PricingURL overrides the models-list endpoint of spend pricing;
	// MirrorCLIOutput makes every conversation's container log carry its CLI's raw output too.
	MirrorCLIOutput bool
	// OfflinePricing forbids live pricing fetches (cached or bundled table).
	PricingURL     string
	OfflinePricing bool
	// WatchCache is how many recent store events are kept in memory for watches (0: store.DefaultWatchCache).
	WatchCache int
	// MemTableMiB is the size of the store's pebble memtable in MiB (0: the store's default, 64).
	MemTableMiB int
	// CacheMiB is the size of the store's pebble block cache in MiB (0: pebble's default, 8).
	CacheMiB int

	// skipNameValidation lets tests run several supervisors in one process.
	skipNameValidation bool
}

// Supervisor is a running daemon.
type Supervisor struct {
	cfg     Config
	dir     layout.Dir
	store   *store.Store
	id      string
	ready   atomic.Bool
	servers []*http.Server
	// TCPAddr is the bound TCP address when Listen is set.
	TCPAddr net.Addr
	// transcripts is the transcript log the pump, the API and the monitors share.
	transcripts *transcript.StoreLog
}

// ID returns the supervisor's stable id.
func (s *Supervisor) ID() string { return s.id }

// Run starts the supervisor and blocks until ctx ends, then shuts down
// gracefully: listeners stop accepting, in-flight requests finish (bounded),
// controllers stop, the store closes.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DataDir == "" {
		cfg.DataDir = layout.DefaultDataDir()
	}
	dir := layout.Dir(cfg.DataDir)
	if cfg.Socket == "" {
		cfg.Socket = dir.Socket()
	}
	if cfg.TokensFile == "" {
		cfg.TokensFile = dir.Tokens()
	}
	log := cfg.Logger
	started := time.Now()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	st, err := store.Open(dir.Store(), store.Options{Logger: log, WatchCache: cfg.WatchCache,
		MemTableSize: uint64(max(cfg.MemTableMiB, 0)) << 20, CacheSize: int64(max(cfg.CacheMiB, 0)) << 20})
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := supervisorID(dir)
	if err != nil {
		return err
	}
	s := &Supervisor{cfg: cfg, dir: dir, store: st, id: id}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	api := apiserver.New(apiserver.Options{
		Store:     st,
		Logger:    log,
		Metrics:   apiserver.NewMetrics(reg),
		Admitters: admission.All(st),
	})

	recallSvc, err := startRecall(dir, st, api)
	if err != nil {
		return err
	}
	defer recallSvc.Close()

	rt, dockerClient, err := docker.NewFromEnv(docker.Options{})
	if err != nil {
		return err
	}
	defer dockerClient.Close()
	pingCtx, cancelPing := context.WithTimeout(ctx, 10*time.Second)
	err = rt.Ping(pingCtx)
	cancelPing()
	if err != nil {
		return fmt.Errorf("the supervisor requires Docker and cannot reach its engine (run hack/ensure-docker.sh): %w", err)
	}
	sessions := &liveguest.Registry{DialTimeout: controllers.GuestDialTimeout}
	egressSrv, err := egress.NewServer(egress.Options{Logger: log, Registerer: reg, Denied: func(uid, target, reason string) {
		sessions.RecordDenial(uid, target, reason)
	}})
	if err != nil {
		return err
	}
	defer egressSrv.Close()
	secretStore := secrets.Store{Dir: dir.Secrets()}
	spendSvc, err := spendapi.NewService(spendapi.Config{DataDir: cfg.DataDir, PricingURL: cfg.PricingURL, Offline: cfg.OfflinePricing})
	if err != nil {
		return err
	}
	ledger := &budget.Ledger{Store: st, Spend: budget.SpendIndex{Service: spendSvc, DataDir: dir}}

	mail, err := startMail(ctx, st, api)
	if err != nil {
		return err
	}
	transcripts := &transcript.StoreLog{Store: st}
	s.transcripts = transcripts
	historyIndex, err := startHistory(ctx, dir, st, transcripts, api, log)
	if err != nil {
		return err
	}
	defer historyIndex.Close()
	// The built-in tools (mail, recall, transcripts) are served beside the granted ones.
	builtinTools := &builtins.Server{Client: storeclient.New(st), Office: mail.Office, Mailbox: mail.Mailbox,
		Recall: recallSvc, Transcripts: transcripts, History: historyIndex}
	toolSvc, err := startTools(ctx, cfg, dir, storeclient.New(st), secretStore, ledger, builtinTools, log)
	if err != nil {
		return err
	}
	defer toolSvc.leases.Close()
	// Guest-opened streams: egress and mounted-tool calls.
	streams := &gateway.StreamRouter{Egress: egressSrv, Tools: toolSvc.server}
	gw, err := gateway.New(gateway.Options{DataDir: cfg.DataDir, Tokens: st, Logger: log, Registerer: reg, GuestStreams: streams,
		MirrorOutput: cfg.MirrorCLIOutput})
	if err != nil {
		return err
	}
	defer gw.Close()
	builder := &imagebuild.Builder{Docker: dockerClient, Defs: images.FS, ArtifactDir: cfg.ArtifactDir, Logger: log, PruneOld: true}
	// Who sent each message survives a restart: a message accepted before a crash and recorded by the CLI after it
	// keeps its speaker instead of becoming unattributed.
	attribution := &transcript.Attribution{Store: st, Logger: log}
	if err := attribution.Load(ctx); err != nil {
		return err
	}
	pump := &transcript.Pump{Log: transcripts, Attribution: attribution, Logger: log}
	sessions.OnConnect = func(ctx context.Context, _ types.NamespacedName, uid string, pty ptyapi.PTY) {
		follower, ok := pty.(ptyapi.TranscriptFollower)
		if !ok {
			return
		}
		// Follow for as long as the guest connection lives; a cut stream is
		// resumed (already committed lines are recognised by native id).
		for ctx.Err() == nil {
			_ = pump.Run(ctx, uid, follower)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}

	ctrlCtx, stopControllers := context.WithCancel(ctx)
	defer stopControllers()
	remoteTargets := &remote.Dialer{Secrets: secretStore, Logger: log}
	monitors := startMonitors(ctrlCtx, st, transcripts, sessions, attribution, remoteTargets, api, log)
	builtinTools.Advisor, builtinTools.Remote = monitors, monitors
	if err := controllers.Start(ctrlCtx, controllers.Options{Store: st, DataDir: dir, SupervisorID: id, Logger: log,
		SkipNameValidation: cfg.skipNameValidation, Runtime: rt, Images: builder, Gateway: gw, Sessions: sessions,
		Egress: egressSrv, Secrets: secretStore, Budget: ledger, ToolBinary: toolSvc.binary, Leases: toolSvc.leases,
		Mail: mail.Mailbox, MailChanged: mail.Changed, Attribution: attribution, Remote: remoteTargets}); err != nil {
		return err
	}
	reaper := &runtime.Reaper{Runtime: rt, Selector: map[string]string{runtime.LabelSupervisor: id},
		IsKnown: knownContainer(st), Interval: cfg.ReapInterval, MinAge: reapGrace, Logger: log}
	go func() { _ = reaper.Run(ctrlCtx) }()

	convapi.New(convapi.Options{Store: st, Sessions: sessions, Transcripts: transcripts, Attribution: attribution, Budget: ledger,
		Logger: log}).Register(api)
	secretapi.Mount(api, secretStore)
	toolcallapi.Register(api, st)

	spendHandler := spendapi.NewHandler(spendSvc, spendapi.HomesUnder(cfg.DataDir))
	api.Handle("GET "+apischema.APIPath+"/spendhistory", apiserver.Authorized("spendhistory", spendHandler))
	api.Handle("GET "+apischema.APIPath+"/namespaces/{namespace}/spendhistory", apiserver.Authorized("spendhistory", spendHandler))

	supinfo.New(supinfo.Options{SupervisorID: id, Started: started, Ready: s.ready.Load, Store: st, Containers: rt,
		Images: builtImages(builder), AgentsDir: dir.Agents()}).Mount(api)

	mux := s.mux(api.Handler(), reg)
	unixLn, err := listenUnix(cfg.Socket)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	s.serve(unixLn, apiserver.Authenticated(mux, func(*http.Request) (*apiserver.Principal, error) {
		return apiserver.LocalAdmin, nil
	}), errc)
	log.Info("serving the API", "socket", cfg.Socket, "dataDir", cfg.DataDir, "supervisorID", id)

	if cfg.Listen != "" {
		tcpLn, err := s.listenTLS()
		if err != nil {
			return err
		}
		authn, err := apiserver.FileTokenAuthenticator(cfg.TokensFile, log)
		if err != nil {
			return err
		}
		if authn.Len() == 0 {
			log.Warn("TCP API has no tokens: every request will get 401; add one with `aicli-supervisor token create`", "file", cfg.TokensFile)
		}
		s.serve(tcpLn, apiserver.Authenticated(mux, authn.Authenticate), errc)
		s.TCPAddr = tcpLn.Addr()
		log.Info("serving the API on TCP", "addr", tcpLn.Addr().String())
	}
	s.ready.Store(true)
	if cfg.Ready != nil {
		cfg.Ready(s)
	}

	select {
	case <-ctx.Done():
	case err := <-errc:
		log.Error("listener failed", "err", err)
	}
	log.Info("shutting down")
	s.ready.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range s.servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	stopControllers()
	_ = os.Remove(cfg.Socket)
	return nil
}

func (s *Supervisor) mux(api http.Handler, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(apischema.APIPath, api)
	mux.Handle(apischema.APIPath+"/", api)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

func (s *Supervisor) serve(ln net.Listener, h http.Handler, errc chan<- error) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn)}
	s.servers = append(s.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
}

// listenUnix listens on path with mode 0600, replacing a stale socket file
// left by a crashed supervisor (the store's lock already guarantees that no
// other supervisor of this data dir runs).
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("socket path %s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket %s is in use by another process", path)
		}
		_ = os.Remove(path)
	}
	old := umask(0o177)
	ln, err := net.Listen("unix", path)
	umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// builtImages lists the guest images b built, for the info endpoint.
func builtImages(b *imagebuild.Builder) supinfo.ImageLister {
	return func(ctx context.Context) ([]infowire.Image, error) {
		imgs, err := b.Images(ctx)
		out := make([]infowire.Image, 0, len(imgs))
		for _, img := range imgs {
			out = append(out, infowire.Image{Ref: img.Ref, Harness: img.Harness, SizeBytes: img.SizeBytes})
		}
		return out, err
	}
}

func supervisorID(dir layout.Dir) (string, error) {
	data, err := os.ReadFile(dir.SupervisorID())
	if err == nil {
		return strings.TrimSpace(string(data)), nil
	}
	if !os.IsNotExist(err) {
		return "", err
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := "sup-" + hex.EncodeToString(b)
	if err := writeFileAtomic(dir.SupervisorID(), []byte(id+"\n"), 0o600); err != nil {
		return "", err
	}
	return id, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
