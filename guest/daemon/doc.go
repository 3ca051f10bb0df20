// Package daemon is the guest daemon's top level: the transparent stdio proxy
// (docker run -it behaves like the bare CLI) and the supervised mode that
// serves the AiCliPty contract over the side channel.
package daemon
