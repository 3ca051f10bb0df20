// Package watchfilter drops the store watch's update events that change
// nothing a consumer reads (predicates on updates, like controller-runtime's,
// for the store's own watch).
package watchfilter
