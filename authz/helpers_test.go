package authz_test

import (
	"crypto/x509"

	"github.com/annexapi/annex/certs"
)

func x509Opts(ca *certs.CA) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}
