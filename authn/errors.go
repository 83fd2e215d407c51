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
	// ErrNoCA is returned by NewX509 and NewRequestHeader when their config
	// has no CA provider.
	ErrNoCA = errors.New("authn: no client CA provider configured")
	// ErrNotAllowedProxy is returned when a front proxy's certificate
	// verifies against the request-header CA but its CN is not in the
	// allowed names.
	ErrNotAllowedProxy = errors.New("authn: front proxy not allowed")
	// ErrSharedCA is returned by CheckDistinctCAs (and New) when the client
	// CA and the request-header CA share a certificate.
	ErrSharedCA = errors.New("authn: the request-header CA must not be the client CA")
	// ErrInvalidToken is returned when a bearer token is presented but no
	// token authenticator accepts it ("invalid bearer token"), or a token
	// authenticator rejects it.
	ErrInvalidToken = errors.New("invalid bearer token")
	// ErrTokenFile is returned by NewTokenFile for a malformed token file.
	ErrTokenFile = errors.New("authn: invalid token file")
	// ErrWebhook is returned when a TokenReview cannot be made or its answer
	// is malformed; the request is then a 401 (fail closed).
	ErrWebhook = errors.New("authn: token review failed")
	// ErrOIDC is returned for an OIDC configuration or discovery problem,
	// and (wrapped) for a JWT that names the issuer but does not verify.
	ErrOIDC = errors.New("authn: oidc")
	// ErrNotReady is returned by Delegated.Ready while the delegated
	// configuration is incomplete; its message says what is missing.
	ErrNotReady = errors.New("authn: delegated authentication not ready")
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
