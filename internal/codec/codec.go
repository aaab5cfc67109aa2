package codec

import (
	"crypto/rand"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

const (
	// MetadataEncodingEncrypted is the "encoding" metadata of a payload this
	// codec encrypted. Anything else passes Decode untouched.
	MetadataEncodingEncrypted = "binary/encrypted"
	// MetadataKeyID is the metadata key naming the key that encrypted the
	// payload.
	MetadataKeyID = "encryption-key-id"
)

// Codec is a converter.PayloadCodec that encrypts each payload with AES-256-GCM.
//
// The whole original payload, metadata included, is serialized and sealed, so
// not even its encoding is visible. The result carries MetadataEncodingEncrypted
// and MetadataKeyID in clear, and its data is a random 12-byte nonce followed
// by the ciphertext and the GCM tag. Random nonces bound each key to about 2^32
// payloads; rotate well before that.
type Codec struct {
	keys *Keyring
}

var _ converter.PayloadCodec = (*Codec)(nil)

// NewCodec returns a codec that encrypts with the keyring's current key.
func NewCodec(k *Keyring) *Codec { return &Codec{keys: k} }

// NewDataConverter returns the default data converter with every payload
// encrypted by a Codec over k. Clients and workers must all use it.
func NewDataConverter(k *Keyring) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), NewCodec(k))
}

// Encode encrypts every payload with the current key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.current
	aead := c.keys.aeads[id]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: serialize payload: %w", err)
		}
		sealed := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(sealed); err != nil {
			return nil, fmt.Errorf("codec: generate nonce: %w", err)
		}
		sealed = aead.Seal(sealed, sealed, plain, nil)
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(MetadataEncodingEncrypted),
				MetadataKeyID:              []byte(id),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode decrypts the payloads this codec encrypted, with whichever key of
// the keyring encrypted each, and returns the others unchanged. A payload
// sealed with a key not in the keyring, or altered after sealing, is an error.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != MetadataEncodingEncrypted {
			out[i] = p
			continue
		}
		decoded, err := c.open(p)
		if err != nil {
			return nil, err
		}
		out[i] = decoded
	}
	return out, nil
}

func (c *Codec) open(p *commonpb.Payload) (*commonpb.Payload, error) {
	idBytes, ok := p.GetMetadata()[MetadataKeyID]
	if !ok {
		return nil, fmt.Errorf("codec: encrypted payload has no %q metadata", MetadataKeyID)
	}
	id := string(idBytes)
	aead, ok := c.keys.aeads[id]
	if !ok {
		return nil, fmt.Errorf("codec: payload was encrypted with key %q, which is not in the keyring (keys: %v)", id, c.keys.ids)
	}
	data := p.GetData()
	if len(data) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("codec: encrypted payload (key %q) is %d bytes, too short to be sealed", id, len(data))
	}
	nonce, sealed := data[:aead.NonceSize()], data[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, sealed, nil)
	if err != nil {
		return nil, fmt.Errorf("codec: encrypted payload (key %q) failed authentication: it was altered or sealed with another key of that id", id)
	}
	var decoded commonpb.Payload
	if err := proto.Unmarshal(plain, &decoded); err != nil {
		return nil, fmt.Errorf("codec: decrypted payload (key %q) is not a serialized payload: %w", id, err)
	}
	return &decoded, nil
}
