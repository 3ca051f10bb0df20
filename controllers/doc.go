// Package controllers holds the reconcile loops that converge the aicli.dev
// resources in the event store toward their desired state. They run as
// unmanaged controller-runtime controllers fed by the store's watch.
package controllers
