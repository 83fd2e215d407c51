// This file holds the on-disk side: EnsureCA, EnsureServingCert and
// EnsureClientCert create material in a data directory on first start and
// reuse it on later starts while it is still valid and still matches what is
// asked for.

package certs

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File modes of written material.
const (
	dirMode  = 0o700
	certMode = 0o644
	keyMode  = 0o600
)

// DefaultHosts are the names every serving certificate of EnsureServingCert
// carries, whatever else is configured.
func DefaultHosts() []string { return []string{"localhost", "127.0.0.1", "::1"} }

// EnsureCA loads the CA kept in cfg.Dir as <Name>.crt and <Name>.key, or
// creates one there when the files are missing, unreadable, not a CA, or
// expire within cfg.RenewBefore. A new CA invalidates every certificate it
// signed before; the Ensure methods of the new CA then replace them.
func EnsureCA(cfg CAConfig) (*CA, error) {
	if cfg.Dir == "" {
		return nil, ErrNoDir
	}
	certFile := filepath.Join(cfg.Dir, cfg.name()+".crt")
	keyFile := filepath.Join(cfg.Dir, cfg.name()+".key")
	now := nowFunc(cfg.Now)
	renew := orDuration(cfg.RenewBefore, DefaultRenewBefore)
	if l, err := loadPair(certFile, keyFile); err == nil {
		c := l.cert
		if c.IsCA && c.Subject.CommonName == cfg.name() && usable(c, now, renew) {
			if err := os.Chmod(keyFile, keyMode); err != nil {
				return nil, fmt.Errorf("certs: %w", err)
			}
			return &CA{Cert: c, Key: l.key, CertPEM: l.certPEM, KeyPEM: l.keyPEM,
				CertFile: certFile, KeyFile: keyFile}, nil
		}
	}
	ca, err := NewCA(cfg)
	if err != nil {
		return nil, err
	}
	if err := writePair(cfg.Dir, certFile, keyFile, ca.CertPEM, ca.KeyPEM); err != nil {
		return nil, err
	}
	ca.CertFile, ca.KeyFile = certFile, keyFile
	return ca, nil
}

// ServingConfig configures CA.EnsureServingCert.
type ServingConfig struct {
	// Dir is the directory the certificate is kept in. Required.
	Dir string
	// Name is the file base name (<Name>.crt, <Name>.key). Zero means "serving".
	Name string
	// Hosts are DNS names and IP addresses the certificate is valid for, in
	// addition to DefaultHosts. A change of hosts replaces the certificate.
	Hosts []string
	// Validity is how long a new certificate is valid. Zero means
	// DefaultLeafValidity.
	Validity time.Duration
	// RenewBefore makes EnsureServingCert replace a certificate that expires
	// within it. Zero means DefaultRenewBefore.
	RenewBefore time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// EnsureServingCert loads the serving certificate kept in cfg.Dir, or issues a
// new one when it is missing, not signed by ca, for other hosts, or expiring
// within cfg.RenewBefore. The certificate is valid for DefaultHosts plus
// cfg.Hosts, with ExtKeyUsage ServerAuth.
func (ca *CA) EnsureServingCert(cfg ServingConfig) (*KeyPair, error) {
	if cfg.Dir == "" {
		return nil, ErrNoDir
	}
	name := cfg.Name
	if name == "" {
		name = "serving"
	}
	dns, ips := splitHosts(append(DefaultHosts(), cfg.Hosts...))
	cn := "localhost"
	if len(cfg.Hosts) > 0 {
		cn = cfg.Hosts[0]
	}
	req := Request{CommonName: cn, DNSNames: dns, IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, Validity: cfg.Validity, Now: cfg.Now}
	matches := func(c *x509.Certificate) bool {
		return slices.Equal(sortedCopy(c.DNSNames), sortedCopy(dns)) &&
			slices.Equal(ipStrings(c.IPAddresses), ipStrings(ips)) &&
			slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	return ca.ensureLeaf(cfg.Dir, name, req, cfg.RenewBefore, matches)
}

// ClientConfig configures CA.EnsureClientCert.
type ClientConfig struct {
	// Dir is the directory the certificate is kept in. Required.
	Dir string
	// Name is the file base name (<Name>.crt, <Name>.key). Zero means "admin".
	Name string
	// User is the user name (subject CN). Required.
	User string
	// Groups are the user's groups (subject O).
	Groups []string
	// Validity is how long a new certificate is valid. Zero means
	// DefaultLeafValidity.
	Validity time.Duration
	// RenewBefore makes EnsureClientCert replace a certificate that expires
	// within it. Zero means DefaultRenewBefore.
	RenewBefore time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// EnsureClientCert loads the client certificate kept in cfg.Dir, or issues a
// new one when it is missing, not signed by ca, for another user or groups, or
// expiring within cfg.RenewBefore. Its ExtKeyUsage is ClientAuth.
func (ca *CA) EnsureClientCert(cfg ClientConfig) (*KeyPair, error) {
	if cfg.Dir == "" {
		return nil, ErrNoDir
	}
	if cfg.User == "" {
		return nil, ErrNoUser
	}
	name := cfg.Name
	if name == "" {
		name = "admin"
	}
	req := Request{CommonName: cfg.User, Organization: cfg.Groups,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: cfg.Validity, Now: cfg.Now}
	matches := func(c *x509.Certificate) bool {
		return c.Subject.CommonName == cfg.User &&
			slices.Equal(c.Subject.Organization, cfg.Groups) &&
			slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	return ca.ensureLeaf(cfg.Dir, name, req, cfg.RenewBefore, matches)
}

func (ca *CA) ensureLeaf(dir, name string, req Request, renewBefore time.Duration, matches func(*x509.Certificate) bool) (*KeyPair, error) {
	certFile := filepath.Join(dir, name+".crt")
	keyFile := filepath.Join(dir, name+".key")
	now := nowFunc(req.Now)
	renew := orDuration(renewBefore, DefaultRenewBefore)
	if validity := orDuration(req.Validity, DefaultLeafValidity); renew >= validity {
		// Otherwise every start would replace the certificate.
		renew = validity / 3
	}
	if l, err := loadPair(certFile, keyFile); err == nil {
		c := l.cert
		if c.CheckSignatureFrom(ca.Cert) == nil && usable(c, now, renew) && matches(c) {
			if err := os.Chmod(keyFile, keyMode); err != nil {
				return nil, fmt.Errorf("certs: %w", err)
			}
			return &KeyPair{Cert: c, Key: l.key, CertPEM: l.certPEM, KeyPEM: l.keyPEM,
				CertFile: certFile, KeyFile: keyFile}, nil
		}
	}
	kp, err := ca.Issue(req)
	if err != nil {
		return nil, err
	}
	if err := writePair(dir, certFile, keyFile, kp.CertPEM, kp.KeyPEM); err != nil {
		return nil, err
	}
	kp.CertFile, kp.KeyFile = certFile, keyFile
	return kp, nil
}

// usable reports whether c is valid now and for longer than renew.
func usable(c *x509.Certificate, now time.Time, renew time.Duration) bool {
	return !now.Before(c.NotBefore) && c.NotAfter.Sub(now) > renew
}

// loaded is material read back from disk.
type loaded struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
}

func loadPair(certFile, keyFile string) (*loaded, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	chain, key, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &loaded{cert: chain[0], key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// writePair writes the key, then the certificate, each atomically (a
// temporary file renamed over the old one), so a reader never sees half a
// file and a crash between the two leaves a mismatch the next start repairs.
func writePair(dir, certFile, keyFile string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := WriteFileAtomic(keyFile, keyPEM, keyMode); err != nil {
		return err
	}
	return WriteFileAtomic(certFile, certPEM, certMode)
}

// WriteFileAtomic writes data to a temporary file in path's directory with the
// given mode, syncs it, and renames it over path. A file that already holds
// data with that mode is left as it is: a server restarting on a full disk
// writes nothing it already has.
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == mode.Perm() && fi.Size() == int64(len(data)) {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			return nil
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

func splitHosts(hosts []string) (dns []string, ips []net.IP) {
	seen := map[string]bool{}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !seen[ip.String()] {
				seen[ip.String()] = true
				ips = append(ips, ip)
			}
			continue
		}
		if !seen[h] {
			seen[h] = true
			dns = append(dns, h)
		}
	}
	return dns, ips
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	slices.Sort(out)
	return out
}
