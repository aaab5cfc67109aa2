// Package devcert makes a certificate authority and the certificates it
// signs, for the local cluster's mutual TLS and for tests. Each CA lives in
// memory for one run: its key is never written, so nothing can sign another
// certificate once the run's files are written.
package devcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	"chargeonce/internal/ownerfile"
)

// Validity is how long a certificate is valid from its issue. A local
// cluster issues new ones at every start.
const Validity = 365 * 24 * time.Hour

// clockSkew backdates every certificate, so that a process whose clock is
// a little behind accepts it.
const clockSkew = time.Hour

// CA is a certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// Pair is a certificate and its private key, PEM-encoded.
type Pair struct {
	Cert, Key []byte
}

// NewCA makes a CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("devcert: %w", err)
	}
	tmpl, err := template(name)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("devcert: CA %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("devcert: CA %s: %w", name, err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM is the CA's certificate, which clients and servers trust.
func (ca *CA) CertPEM() []byte { return ca.pem }

// Pool is a pool that holds the CA's certificate alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Server issues a certificate for a server reached at hosts (DNS names or
// IP addresses). It serves as a client certificate too, as a Temporal
// server's services present their own certificate when they call each
// other.
func (ca *CA) Server(name string, hosts ...string) (Pair, error) {
	return ca.issue(name, hosts, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// Client issues a client certificate for mutual TLS, named name.
func (ca *CA) Client(name string) (Pair, error) {
	return ca.issue(name, nil, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(name string, hosts []string, usage ...x509.ExtKeyUsage) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("devcert: %w", err)
	}
	tmpl, err := template(name)
	if err != nil {
		return Pair{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = usage
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, fmt.Errorf("devcert: certificate %s: %w", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, fmt.Errorf("devcert: key of %s: %w", name, err)
	}
	return Pair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Write writes the certificate and its key to certFile and keyFile, mode
// 0600, replacing what was there.
func (p Pair) Write(certFile, keyFile string) error {
	if err := WriteFile(certFile, p.Cert); err != nil {
		return err
	}
	return WriteFile(keyFile, p.Key)
}

// WriteFile writes PEM data to file, mode 0600 even when the file existed
// with another mode (ownerfile.Write).
func WriteFile(file string, data []byte) error {
	if err := ownerfile.Write(file, data); err != nil {
		return fmt.Errorf("devcert: %w", err)
	}
	return nil
}

func template(name string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("devcert: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"chargeonce local"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(Validity),
	}, nil
}
