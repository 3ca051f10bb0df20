// Package reaper is the guest's PID 1 duty: it reaps every child that exits
// (including orphaned grandchildren re-parented to PID 1) from one SIGCHLD
// loop, and hands the exit status of processes it started to their waiters so
// that reaping never steals the CLI's own wait.
package reaper
