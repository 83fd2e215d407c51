// This file holds the in-memory side of the package: a CA that issues leaf and
// intermediate certificates, the PEM encoding of keys and certificates, and
// their parsing.

package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Defaults of the configuration structs.
const (
	// DefaultCAValidity is how long a new CA is valid.
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
	// DefaultLeafValidity is how long a new serving or client certificate is valid.
	DefaultLeafValidity = 365 * 24 * time.Hour
	// DefaultRenewBefore is how close to its expiry a certificate is replaced
	// rather than reused.
	DefaultRenewBefore = 30 * 24 * time.Hour
	// backdate is subtracted from NotBefore so that a peer whose clock is a
	// little behind still accepts a certificate issued a moment ago.
	backdate = time.Hour
)

// CA is a certificate authority whose private key is held in memory.
//
// A CA is immutable after creation and safe for concurrent use.
type CA struct {
	// Cert is the CA certificate.
	Cert *x509.Certificate
	// Key is its private key.
	Key crypto.Signer
	// CertPEM and KeyPEM are the PEM encodings of Cert and Key.
	CertPEM []byte
	KeyPEM  []byte
	// CertFile and KeyFile are where the material lives; empty for a CA made
	// in memory by NewCA.
	CertFile string
	KeyFile  string
}

// KeyPair is a certificate and its private key.
type KeyPair struct {
	// Cert is the certificate.
	Cert *x509.Certificate
	// Key is its private key.
	Key crypto.Signer
	// CertPEM and KeyPEM are the PEM encodings of Cert and Key.
	CertPEM []byte
	KeyPEM  []byte
	// CertFile and KeyFile are where the material lives; empty for a pair made
	// in memory by CA.Issue.
	CertFile string
	KeyFile  string
}

// TLSCertificate returns the pair as a tls.Certificate (Leaf set), followed by
// the given intermediates, for a tls.Config or a client.
func (kp *KeyPair) TLSCertificate(intermediates ...*x509.Certificate) tls.Certificate {
	c := tls.Certificate{Certificate: [][]byte{kp.Cert.Raw}, PrivateKey: kp.Key, Leaf: kp.Cert}
	for _, ic := range intermediates {
		c.Certificate = append(c.Certificate, ic.Raw)
	}
	return c
}

// Pool returns a new pool holding only the CA certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Request describes a certificate for CA.Issue. Its zero value (plus a
// CommonName) is a client certificate valid for DefaultLeafValidity.
type Request struct {
	// CommonName is the subject CN: the user name of a client certificate.
	CommonName string
	// Organization is the subject O: the groups of a client certificate.
	Organization []string
	// ExtraSubjectNames are further subject attributes, such as the user UID
	// (OID 0.9.2342.19200300.100.1.1) that Kubernetes reads from client
	// certificates.
	ExtraSubjectNames []pkix.AttributeTypeAndValue
	// DNSNames and IPAddresses are the subject alternative names of a
	// serving certificate.
	DNSNames    []string
	IPAddresses []net.IP
	// ExtKeyUsage lists the extended key usages. Zero means ClientAuth when
	// there are no SANs and ServerAuth when there are.
	ExtKeyUsage []x509.ExtKeyUsage
	// IsCA makes an intermediate CA certificate (Issue then still returns a
	// KeyPair; IssueCA is the convenient form).
	IsCA bool
	// Validity is how long the certificate is valid from Now. Zero means
	// DefaultLeafValidity; a negative value makes an expired certificate,
	// which tests use.
	Validity time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// CAConfig configures NewCA and EnsureCA.
type CAConfig struct {
	// Dir is the directory EnsureCA keeps the CA in; NewCA ignores it.
	Dir string
	// Name is the CA's subject CN and its file base name (<Name>.crt,
	// <Name>.key). Zero means "annex-ca".
	Name string
	// Validity is how long a new CA is valid. Zero means DefaultCAValidity.
	Validity time.Duration
	// RenewBefore makes EnsureCA replace a CA that expires within it. Zero
	// means DefaultRenewBefore.
	RenewBefore time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

func (c CAConfig) name() string {
	if c.Name == "" {
		return "annex-ca"
	}
	return c.Name
}

func nowFunc(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// NewCA creates a self-signed ECDSA P-256 CA in memory.
func NewCA(cfg CAConfig) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generating CA key: %w", err)
	}
	now := nowFunc(cfg.Now)
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cfg.name()},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(orDuration(cfg.Validity, DefaultCAValidity)),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("certs: creating CA certificate: %w", err)
	}
	return caFromDER(der, key)
}

func caFromDER(der []byte, key crypto.Signer) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parsing new certificate: %w", err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: EncodeCert(cert), KeyPEM: keyPEM}, nil
}

// Issue signs a new certificate with a fresh ECDSA P-256 key.
func (ca *CA) Issue(req Request) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: generating key: %w", err)
	}
	now := nowFunc(req.Now)
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	usage := req.ExtKeyUsage
	if usage == nil {
		if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
			usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		} else {
			usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		}
	}
	validity := orDuration(req.Validity, DefaultLeafValidity)
	notBefore := now.Add(-backdate)
	if validity < 0 { // an already expired certificate
		notBefore = now.Add(2 * validity)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organization, ExtraNames: req.ExtraSubjectNames},
		NotBefore:    notBefore,
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
	}
	if req.IsCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
		tmpl.BasicConstraintsValid = true
		tmpl.IsCA = true
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: signing certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: parsing new certificate: %w", err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: EncodeCert(cert), KeyPEM: keyPEM}, nil
}

// IssueCA signs an intermediate CA named name, valid for validity (zero:
// DefaultCAValidity). Its extended key usages are left empty, which allows
// any usage down the chain.
func (ca *CA) IssueCA(name string, validity time.Duration) (*CA, error) {
	kp, err := ca.Issue(Request{CommonName: name, IsCA: true, ExtKeyUsage: []x509.ExtKeyUsage{},
		Validity: orDuration(validity, DefaultCAValidity)})
	if err != nil {
		return nil, err
	}
	return &CA{Cert: kp.Cert, Key: kp.Key, CertPEM: kp.CertPEM, KeyPEM: kp.KeyPEM}, nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: generating serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil // never zero
}

// EncodeCert returns the PEM encoding of cert.
func EncodeCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// EncodeKey returns the PEM encoding of key: "EC PRIVATE KEY" for ECDSA keys,
// "PRIVATE KEY" (PKCS #8) for others.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	if ec, ok := key.(*ecdsa.PrivateKey); ok {
		der, err := x509.MarshalECPrivateKey(ec)
		if err != nil {
			return nil, fmt.Errorf("certs: encoding key: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseCerts returns every CERTIFICATE block of a PEM bundle, in order. Other
// block types are skipped; no certificate at all is ErrNoCertificate.
func ParseCerts(pemBytes []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := pemBytes
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: parsing certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, ErrNoCertificate
	}
	return out, nil
}

// ParseKey returns the first private key of a PEM file: PKCS #8, SEC 1 (EC) or
// PKCS #1 (RSA).
func ParseKey(pemBytes []byte) (crypto.Signer, error) {
	rest := pemBytes
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, ErrNoPrivateKey
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("certs: parsing private key: %w", err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("certs: unsupported private key type %T", key)
		}
		return signer, nil
	}
}

// keyMatches reports whether key is the private half of cert's public key.
func keyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch pub := key.Public().(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
		return pub.(equaler).Equal(cert.PublicKey)
	default:
		return false
	}
}

// parsePair parses a certificate chain and its key and checks they match.
func parsePair(certPEM, keyPEM []byte) ([]*x509.Certificate, crypto.Signer, error) {
	chain, err := ParseCerts(certPEM)
	if err != nil {
		return nil, nil, err
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	if !keyMatches(chain[0], key) {
		return nil, nil, ErrKeyMismatch
	}
	return chain, key, nil
}
