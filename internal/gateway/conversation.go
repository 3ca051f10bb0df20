package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// maxSocketPath is the usable length of a unix socket path (sun_path is 108 bytes including the NUL).
const maxSocketPath = 107

// validID restricts conversation ids to names that are safe as one path component.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Launch is what the runtime needs to start a guest container for a prepared conversation.
type Launch struct {
	// ConversationID is the prepared conversation.
	ConversationID string
	// HostDir is the per-conversation directory to bind-mount (the directory, not the socket file).
	HostDir string
	// HostSocket is the socket inside HostDir, for dialing from the host (tests, diagnostics).
	HostSocket string
	// ContainerDir is where HostDir must be mounted inside the container ("/run/aicli").
	ContainerDir string
	// Env holds the four bootstrap variables for the container, socket path as seen in the container.
	Env map[string]string
	// TokenExpiresAt is when the launch token in Env stops being accepted.
	TokenExpiresAt time.Time
}

// closer is anything the gateway closes on release or shutdown.
type closer interface{ Close() error }

// conversation is the gateway's state for one prepared conversation. Fields other than admitMu are guarded by
// Gateway.mu.
type conversation struct {
	id   string
	dir  string
	sock string
	ln   *net.UnixListener

	// admitMu serialises admissions and release of this conversation, so the store operations of one handshake
	// never interleave with another's or with Release.
	admitMu sync.Mutex

	released bool
	guest    *GuestConn
	changed  chan struct{} // closed and replaced whenever guest changes or the conversation is released
	pending  map[net.Conn]struct{}
	tokens   map[string]time.Time // hash → expiry of launch tokens issued by this process and not yet presented
}

// notifyLocked wakes WaitGuest callers.
func (c *conversation) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// shutdownLocked marks the conversation released, wakes waiters and returns everything that must be closed.
func (c *conversation) shutdownLocked() []closer {
	if c.released {
		return nil
	}
	c.released = true
	out := []closer{c.ln}
	if c.guest != nil {
		out = append(out, c.guest)
		c.guest = nil
	}
	for conn := range c.pending {
		out = append(out, conn)
	}
	c.notifyLocked()
	return out
}

// Prepare readies a conversation for its guest: it creates <RunDir>/conv/<id>/ (0700), listens on gw.sock there
// (re-listening on an existing directory for a conversation adopted after a restart), issues a fresh launch token
// and returns the bind mount and bootstrap environment. Calling it again for a prepared conversation keeps the
// listener and issues another token.
func (g *Gateway) Prepare(ctx context.Context, conversationID string) (*Launch, error) {
	if !validID.MatchString(conversationID) {
		return nil, fmt.Errorf("gateway: invalid conversation id %q (want %s)", conversationID, validID)
	}
	conv, err := g.listen(conversationID)
	if err != nil {
		return nil, err
	}
	token, hash, expires, err := g.issueLaunchToken(ctx, conversationID)
	if err != nil {
		return nil, fmt.Errorf("gateway: prepare %s: %w", conversationID, err)
	}
	g.mu.Lock()
	live := !conv.released
	var expired []string
	if live {
		conv.tokens[hash] = expires
		now := g.opts.Clock()
		for h, exp := range conv.tokens {
			if !now.Before(exp) {
				expired = append(expired, h)
				delete(conv.tokens, h)
			}
		}
	}
	g.mu.Unlock()
	if !live { // released or closed while the token was being stored
		_ = g.forget(context.WithoutCancel(ctx), bucketLaunch, hash)
		return nil, fmt.Errorf("gateway: prepare %s: released concurrently", conversationID)
	}
	for _, h := range expired { // unusable anyway; keep the store from accumulating them
		if err := g.forget(ctx, bucketLaunch, h); err != nil {
			g.log.Warn("dropping an expired launch token failed", "conversation", conversationID, "err", err)
		}
	}
	l := &Launch{
		ConversationID: conversationID,
		HostDir:        conv.dir,
		HostSocket:     conv.sock,
		ContainerDir:   wire.ContainerDir,
		Env: map[string]string{
			wire.EnvSocket:         filepath.Join(wire.ContainerDir, wire.SocketName),
			wire.EnvFingerprint:    g.fingerprint,
			wire.EnvConversationID: conversationID,
			wire.EnvLaunchToken:    token,
		},
		TokenExpiresAt: expires,
	}
	if g.opts.MirrorOutput {
		l.Env[wire.EnvMirrorOutput] = "1"
	}
	return l, nil
}

// listen returns the conversation's state, creating its directory and listener when needed.
func (g *Gateway) listen(id string) (*conversation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	if c, ok := g.convs[id]; ok {
		return c, nil
	}
	dir := filepath.Join(g.opts.RunDir, "conv", id)
	sock := filepath.Join(dir, wire.SocketName)
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("gateway: socket path %s is %d bytes, over the unix limit of %d: use a shorter RunDir",
			sock, len(sock), maxSocketPath)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("gateway: create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("gateway: chmod %s: %w", dir, err)
	}
	// A socket left by a previous supervisor process (crash) blocks bind; pebble's lock guarantees no other
	// live supervisor owns this data dir, so the file is stale.
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("gateway: remove stale socket: %w", err)
	}
	ln, err := listenStaged(filepath.Join(g.opts.RunDir, "stage"), id, sock)
	if err != nil {
		return nil, err
	}
	c := &conversation{
		id: id, dir: dir, sock: sock, ln: ln,
		changed: make(chan struct{}),
		pending: make(map[net.Conn]struct{}),
		tokens:  make(map[string]time.Time),
	}
	g.convs[id] = c
	g.wg.Add(1)
	go g.acceptLoop(c)
	g.log.Info("listening for guest", "conversation", id, "socket", sock)
	return c, nil
}

// listenStaged listens on a socket that appears at sock already 0600. The conversation's directory is bind-mounted
// into its container, where the guest runs as root: it may put a symlink where the socket goes, and a chmod by path
// there would follow it to a host file. So the socket is made in stage, a host-only 0700 directory, chmodded there
// and renamed into place (rename replaces whatever is at sock and never follows a link). Closing the listener leaves
// the file; the next listen or the conversation's release removes it.
func listenStaged(stage, id, sock string) (*net.UnixListener, error) {
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return nil, fmt.Errorf("gateway: create %s: %w", stage, err)
	}
	staged := filepath.Join(stage, id+".sock")
	if err := os.Remove(staged); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("gateway: remove stale staged socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: staged, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("gateway: listen %s: %w", staged, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(staged, 0o600); err != nil {
		_ = ln.Close()
		_ = os.Remove(staged)
		return nil, fmt.Errorf("gateway: chmod %s: %w", staged, err)
	}
	if err := os.Rename(staged, sock); err != nil {
		_ = ln.Close()
		_ = os.Remove(staged)
		return nil, fmt.Errorf("gateway: move the socket into place at %s: %w", sock, err)
	}
	return ln, nil
}

// acceptLoop accepts connections on a conversation's socket until its listener closes.
func (g *Gateway) acceptLoop(c *conversation) {
	defer g.wg.Done()
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			g.log.Error("accept on guest socket failed", "conversation", c.id, "err", err)
			t := time.NewTimer(50 * time.Millisecond) // e.g. EMFILE: do not spin
			select {
			case <-g.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		g.mu.Lock()
		if c.released {
			g.mu.Unlock()
			_ = conn.Close()
			continue
		}
		c.pending[conn] = struct{}{}
		g.wg.Add(1)
		g.mu.Unlock()
		go func() {
			defer g.wg.Done()
			g.serveConn(c, conn)
		}()
	}
}

// WaitGuest blocks until a guest of the conversation has completed the handshake and returns its connection.
func (g *Gateway) WaitGuest(ctx context.Context, conversationID string) (*GuestConn, error) {
	for {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			return nil, ErrClosed
		}
		c, ok := g.convs[conversationID]
		if !ok {
			g.mu.Unlock()
			return nil, fmt.Errorf("gateway: wait for guest of %s: %w", conversationID, ErrNotPrepared)
		}
		if c.guest != nil {
			gc := c.guest
			g.mu.Unlock()
			return gc, nil
		}
		ch := c.changed
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("gateway: wait for guest of %s: %w", conversationID, ctx.Err())
		case <-ch:
		}
	}
}

// Guest returns the conversation's current guest connection, if one is live.
func (g *Gateway) Guest(conversationID string) (*GuestConn, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.convs[conversationID]; ok && c.guest != nil {
		return c.guest, true
	}
	return nil, false
}

// Release ends a conversation on this gateway: it closes its listener and connections, deletes its unspent
// launch tokens and its reconnect record (so the guest cannot come back), and removes its directory. Releasing an
// unknown conversation still deletes a reconnect record and directory left by an earlier process.
func (g *Gateway) Release(conversationID string) error {
	if !validID.MatchString(conversationID) {
		return fmt.Errorf("gateway: invalid conversation id %q", conversationID)
	}
	g.mu.Lock()
	c, ok := g.convs[conversationID]
	var conns []closer
	var tokens map[string]time.Time
	if ok {
		delete(g.convs, conversationID)
		conns = c.shutdownLocked()
		tokens = maps.Clone(c.tokens)
	}
	g.mu.Unlock()
	for _, cl := range conns {
		_ = cl.Close()
	}
	if ok {
		c.admitMu.Lock() // wait for an admission in flight; it will see released and back out
		defer c.admitMu.Unlock()
	}
	ctx := context.Background()
	var errs []error
	for hash := range tokens {
		errs = append(errs, g.forget(ctx, bucketLaunch, hash))
	}
	errs = append(errs, g.forget(ctx, bucketReconnect, conversationID))
	if err := os.RemoveAll(filepath.Join(g.opts.RunDir, "conv", conversationID)); err != nil {
		errs = append(errs, fmt.Errorf("remove conversation dir: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gateway: release %s: %w", conversationID, err)
	}
	g.log.Info("released conversation", "conversation", conversationID)
	return nil
}
