//go:build !linux

package pgtest

import "syscall"

// sysProcAttr returns nil: switching users (as != nil, running as root) is
// only implemented on Linux, where it is needed; elsewhere initdb reports
// that it refuses to run as root.
func sysProcAttr(as *runAs) *syscall.SysProcAttr { return nil }
