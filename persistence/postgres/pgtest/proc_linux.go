package pgtest

import "syscall"

// sysProcAttr runs a child as the user as (when not nil) and has the kernel
// send it SIGQUIT (PostgreSQL's immediate shutdown) if the test binary dies
// without stopping it (a test timeout's panic, kill -9).
func sysProcAttr(as *runAs) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	if as != nil {
		attr.Credential = &syscall.Credential{Uid: as.uid, Gid: as.gid}
	}
	return attr
}
