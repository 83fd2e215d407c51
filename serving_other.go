//go:build !unix

package annex

import (
	"errors"
	"syscall"
)

// socketOptions refuses socket sharing where SO_REUSEPORT and SO_REUSEADDR
// are not set this way.
func socketOptions(port, address bool) func(network, address string, c syscall.RawConn) error {
	if !port && !address {
		return nil
	}
	return func(string, string, syscall.RawConn) error {
		return errors.New("--permit-port-sharing and --permit-address-sharing need a unix system")
	}
}
