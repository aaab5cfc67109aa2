package temporalclient

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

func TestCompression_NoneOverLoopbackGzipElsewhere(t *testing.T) {
	for address, want := range map[string]client.GrpcCompression{
		"127.0.0.1:7233":                &client.GrpcCompressionNone{},
		"[::1]:7233":                    &client.GrpcCompressionNone{},
		"localhost:7233":                &client.GrpcCompressionNone{},
		"temporal:7233":                 &client.GrpcCompressionGzip{},
		"10.0.0.7:7233":                 &client.GrpcCompressionGzip{},
		"ns.tmprl.cloud:7233":           &client.GrpcCompressionGzip{},
		"no-port-so-not-parsed-as-host": &client.GrpcCompressionGzip{},
	} {
		require.IsType(t, want, compression(address), address)
	}
}
