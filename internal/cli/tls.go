package cli

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"

	"chargeonce/internal/serve"
)

// TLSFlags are the certificate flags of a command's HTTP server:
// --tls-cert and --tls-key.
type TLSFlags struct{ cert, key string }

// ServerTLS defines --tls-cert and --tls-key on fs; what names what the
// server serves, for the help.
func ServerTLS(fs *flag.FlagSet, what string) *TLSFlags {
	t := &TLSFlags{}
	fs.StringVar(&t.cert, "tls-cert", "", "certificate chain `file` (PEM) to serve "+what+" over HTTPS; with --tls-key (default: plain HTTP)")
	fs.StringVar(&t.key, "tls-key", "", "private key `file` (PEM) of --tls-cert")
	return t
}

// Config loads the certificate (serve.LoadTLS) for serve.Run: nil when
// neither flag is given, which serves plain HTTP. One flag without the
// other, or files that do not load, are UsageErrors.
func (t *TLSFlags) Config() (*tls.Config, error) {
	if t.cert == "" && t.key == "" {
		return nil, nil
	}
	if t.cert == "" || t.key == "" {
		return nil, UsageError{errors.New("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")}
	}
	cfg, err := serve.LoadTLS(t.cert, t.key)
	if err != nil {
		return nil, UsageError{fmt.Errorf("--tls-cert/--tls-key: %w", err)}
	}
	return cfg, nil
}
