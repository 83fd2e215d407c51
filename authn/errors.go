// This file holds the package's sentinel errors and its one typed error.

package authn

import (
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Errors of authentication; callers test with errors.Is. None reaches the
// client: a failed authentication answers 401 "Unauthorized" whatever the
// cause, and the error goes to FilterConfig.OnFailure for logs and audit.
var (
	// ErrInvalidCertificate is returned (inside a *CertificateError) when a
	// client certificate does not verify against the client CA: unknown
	// issuer, expired, or not valid for client authentication.
	ErrInvalidCertificate = errors.New("invalid client certificate")
	// ErrInvalidUID is returned when a client certificate's subject carries
	// more than one UID, an empty one, or one that is not a string.
	ErrInvalidUID = errors.New("invalid user UID in client certificate")
	// ErrNoAuthenticator is returned by WithAuthentication and New when they
	// are given nothing to authenticate with.
	ErrNoAuthenticator = errors.New("authn: no authenticator configured")
	// ErrNoCA is returned by NewX509 when its config has no CA provider.
	ErrNoCA = errors.New("authn: no client CA provider configured")
)

// CertificateError says which client certificate failed verification and
// why. It unwraps to ErrInvalidCertificate and to the crypto/x509 error.
type CertificateError struct {
	// ID names the certificate as Kubernetes logs it: "SN=…, SKID=…, AKID=…".
	ID string
	// Err is the verification error from crypto/x509.
	Err error
}

// Error is the message Kubernetes logs for the same failure.
func (e *CertificateError) Error() string {
	return fmt.Sprintf("verifying certificate %s failed: %v", e.ID, e.Err)
}

// Unwrap returns ErrInvalidCertificate and the verification error.
func (e *CertificateError) Unwrap() []error { return []error{ErrInvalidCertificate, e.Err} }

// certificateID formats a certificate's serial and key IDs as Kubernetes does.
func certificateID(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", c.SerialNumber, colonHex(c.SubjectKeyId), colonHex(c.AuthorityKeyId))
}

func colonHex(b []byte) string {
	h := strings.ToUpper(hex.EncodeToString(b))
	var sb strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(h[i : i+2])
	}
	return sb.String()
}
