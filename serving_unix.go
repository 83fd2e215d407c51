//go:build unix

package annex

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socketOptions sets SO_REUSEPORT and SO_REUSEADDR on the listening socket
// as --permit-port-sharing and --permit-address-sharing ask.
func socketOptions(port, address bool) func(network, address string, c syscall.RawConn) error {
	if !port && !address {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if address {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			}
			if port && serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}
