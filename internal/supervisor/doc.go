// Package supervisor composes the aicli-supervisor daemon: the event store,
// the API server on its listeners, the controllers, metrics and health, and a
// graceful shutdown.
package supervisor
