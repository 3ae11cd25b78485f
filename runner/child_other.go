//go:build !linux

package runner

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
