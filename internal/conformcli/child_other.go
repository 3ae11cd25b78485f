//go:build !linux

package conformcli

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
