package codec_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"chargeonce/internal/codec"
)

// testKey returns a deterministic, distinct key for each seed.
func testKey(seed byte) []byte {
	return bytes.Repeat([]byte{seed}, codec.KeySize)
}

func keyEntry(id string, seed byte) string {
	return id + ":" + base64.StdEncoding.EncodeToString(testKey(seed))
}

func mustParse(t testing.TB, s string) *codec.Keyring {
	t.Helper()
	k, err := codec.ParseKeyring(s)
	require.NoError(t, err)
	return k
}

func jsonPayload(t testing.TB, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

func encodeOne(t testing.TB, c *codec.Codec, p *commonpb.Payload) *commonpb.Payload {
	t.Helper()
	out, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.Len(t, out, 1)
	return out[0]
}

func TestCodec_RoundTripRestoresPayloadAndHidesItsContent(t *testing.T) {
	c := codec.NewCodec(mustParse(t, keyEntry("k1", 1)))
	original := jsonPayload(t, map[string]string{"card_token": "tok_visa_4242"})

	encrypted := encodeOne(t, c, original)
	require.Equal(t, codec.MetadataEncodingEncrypted, string(encrypted.GetMetadata()[converter.MetadataEncoding]))
	require.Equal(t, "k1", string(encrypted.GetMetadata()[codec.MetadataKeyID]))
	require.Len(t, encrypted.GetMetadata(), 2, "only the encoding and key id may travel in clear")
	require.NotContains(t, string(encrypted.GetData()), "tok_visa_4242")
	require.NotContains(t, string(encrypted.GetData()), "json/plain")

	decoded, err := c.Decode([]*commonpb.Payload{encrypted})
	require.NoError(t, err)
	require.True(t, proto.Equal(original, decoded[0]), "decoded %v, want %v", decoded[0], original)
}

func TestCodec_SamePayloadEncryptsDifferentlyEachTime(t *testing.T) {
	c := codec.NewCodec(mustParse(t, keyEntry("k1", 1)))
	p := jsonPayload(t, "same")
	require.NotEqual(t, encodeOne(t, c, p).GetData(), encodeOne(t, c, p).GetData())
}

func TestCodec_RotationDecryptsOldKeysAndEncryptsWithTheNewOne(t *testing.T) {
	oldRing := codec.NewCodec(mustParse(t, keyEntry("k1", 1)))
	rotated := codec.NewCodec(mustParse(t, keyEntry("k2", 2)+","+keyEntry("k1", 1)))
	original := jsonPayload(t, "written before rotation")

	decoded, err := rotated.Decode([]*commonpb.Payload{encodeOne(t, oldRing, original)})
	require.NoError(t, err)
	require.True(t, proto.Equal(original, decoded[0]))

	fresh := encodeOne(t, rotated, original)
	require.Equal(t, "k2", string(fresh.GetMetadata()[codec.MetadataKeyID]))
	_, err = oldRing.Decode([]*commonpb.Payload{fresh})
	require.ErrorContains(t, err, `payload was encrypted with key "k2", which is not in the keyring (keys: [k1])`)
}

func TestCodec_TamperedPayloadIsRejected(t *testing.T) {
	c := codec.NewCodec(mustParse(t, keyEntry("k1", 1)+","+keyEntry("k0", 9)))
	sealed := encodeOne(t, c, jsonPayload(t, "amount=1000"))

	tests := []struct {
		name    string
		tamper  func(p *commonpb.Payload)
		wantErr string
	}{
		{"nonce byte flipped", func(p *commonpb.Payload) { p.Data[0] ^= 1 }, "failed authentication"},
		{"ciphertext byte flipped", func(p *commonpb.Payload) { p.Data[len(p.Data)/2] ^= 1 }, "failed authentication"},
		{"tag byte flipped", func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 }, "failed authentication"},
		{"key id switched to another key", func(p *commonpb.Payload) { p.Metadata[codec.MetadataKeyID] = []byte("k0") }, "failed authentication"},
		{"truncated", func(p *commonpb.Payload) { p.Data = p.Data[:20] }, "too short"},
		{"key id removed", func(p *commonpb.Payload) { delete(p.Metadata, codec.MetadataKeyID) }, `no "encryption-key-id" metadata`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := proto.Clone(sealed).(*commonpb.Payload)
			tt.tamper(p)
			_, err := c.Decode([]*commonpb.Payload{p})
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestCodec_DecodePassesForeignPayloadsThroughUnchanged(t *testing.T) {
	c := codec.NewCodec(mustParse(t, keyEntry("k1", 1)))
	plain := jsonPayload(t, "not secret")
	encrypted := encodeOne(t, c, jsonPayload(t, "secret"))

	decoded, err := c.Decode([]*commonpb.Payload{plain, encrypted})
	require.NoError(t, err)
	require.Same(t, plain, decoded[0])
	var s string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(decoded[1], &s))
	require.Equal(t, "secret", s)
}

func TestNewDataConverter_EncryptsWhatTheDefaultConverterProduces(t *testing.T) {
	dc := codec.NewDataConverter(mustParse(t, keyEntry("k1", 1)))
	p, err := dc.ToPayload("tok_mastercard_5555")
	require.NoError(t, err)
	require.Equal(t, codec.MetadataEncodingEncrypted, string(p.GetMetadata()[converter.MetadataEncoding]))
	require.NotContains(t, string(p.GetData()), "tok_mastercard_5555")

	var back string
	require.NoError(t, dc.FromPayload(p, &back))
	require.Equal(t, "tok_mastercard_5555", back)
}

func benchmarkPayload(b *testing.B) *commonpb.Payload {
	// Roughly the size of a payment intent as the workflows pass it around.
	return jsonPayload(b, map[string]any{
		"order_id":           "ord_01J9Z7Q4W8K3M2N5P6R7S8T9V0",
		"idempotency_key":    "0192f5c4-7a1e-7b3c-9d2e-4f5a6b7c8d9e",
		"amount_minor":       129900,
		"currency":           "EUR",
		"card_token":         "tok_visa_4242424242424242",
		"merchant_reference": "shop-ord_01J9Z7Q4W8K3M2N5P6R7S8T9V0-0192f5c47a1e7b3c9d2e4f5a6b7c8d9e",
	})
}

func BenchmarkCodec_Encode(b *testing.B) {
	c := codec.NewCodec(mustParse(b, keyEntry("k1", 1)))
	payloads := []*commonpb.Payload{benchmarkPayload(b)}
	b.SetBytes(int64(len(payloads[0].GetData())))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(payloads); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCodec_Decode(b *testing.B) {
	c := codec.NewCodec(mustParse(b, keyEntry("k1", 1)))
	plain := benchmarkPayload(b)
	payloads := []*commonpb.Payload{encodeOne(b, c, plain)}
	b.SetBytes(int64(len(plain.GetData())))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(payloads); err != nil {
			b.Fatal(err)
		}
	}
}
