// Package liveguest is the registry of live guest connections: which
// conversation's guest has dialled in over the side channel, its remote
// AiCliPty, and its last observed execution status. The conversation
// controller and the conversation API both import it; it imports only the
// gateway and the guest's contract packages.
package liveguest
