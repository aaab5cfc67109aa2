package chargeonce

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// PaymentIntent is one attempt to pay one order: the same order, the same
// amount and the same card. Every request sent to the provider for it carries
// its Key, which is also the ID of the workflow that charges it.
type PaymentIntent struct {
	// Key is the idempotency key, a UUIDv7 string stored before the first
	// request is sent.
	Key string `json:"key"`
	// OrderID is the merchant's order number.
	OrderID int64 `json:"orderId"`
	// Amount is what the card is charged.
	Amount Money `json:"amount"`
	// CardToken is the provider's token for the card. It is kept in clear
	// only inside encrypted workflow payloads; the database stores its hash.
	// It is empty when the workflow was started by the outbox sweep, which
	// has only the hash: such a workflow can send no charge, and settles
	// its attempt not_processed at once.
	CardToken string `json:"cardToken,omitempty"`
	// CardHash is CardHasher.Hash(CardToken), kept so that a token brought
	// later can be checked against the card of this intent. Intents started
	// before card hashes were keyed carry LegacyCardHash(CardToken) instead.
	CardHash string `json:"cardHash"`
	// CardHashKeyed says that CardHash is keyed (CardHasher). It is false
	// in the inputs of workflows started before, whose CardHash is the
	// legacy one, which workflow code can still check a token against.
	CardHashKeyed bool `json:"cardHashKeyed,omitempty"`
	// MerchantReference is how the charge is found at the provider when the
	// outcome is unknown.
	MerchantReference string `json:"merchantReference"`
	// Description is shown on the provider's dashboard.
	Description string `json:"description"`
	// CreatedAt is when the attempt was stored; the abandon deadline counts
	// from it.
	CreatedAt time.Time `json:"createdAt"`
	// Provider names the provider the attempt is sent to, which the
	// worker's provider registry maps to its port. It is empty in the inputs
	// of workflows started before attempts named their provider, which were
	// all sent to the deployment's default provider.
	Provider string `json:"provider,omitempty"`
	// Capture is the payment's capture mode; empty is automatic, as in
	// the inputs of workflows started before holds existed.
	Capture CaptureMode `json:"capture,omitempty"`
	// OnDeadline is what the hold's deadline does to a hold of a manual
	// capture that nobody captured or voided; empty is void.
	OnDeadline DeadlineAction `json:"onDeadline,omitempty"`
}

// Validate checks that the intent can be charged.
func (p PaymentIntent) Validate() error {
	switch {
	case !ValidKey(p.Key):
		return fmt.Errorf("payment intent: key %q is not a UUID", p.Key)
	case p.OrderID <= 0:
		return fmt.Errorf("payment intent: order ID %d is not positive", p.OrderID)
	case len(p.CardHash) != sha256.Size*2:
		return fmt.Errorf("payment intent: card hash %q is not a hex SHA-256", p.CardHash)
	case p.CardToken != "" && !p.CardHashKeyed && LegacyCardHash(p.CardToken) != p.CardHash:
		return fmt.Errorf("payment intent: card token does not match the card hash")
	case p.MerchantReference == "":
		return fmt.Errorf("payment intent: merchant reference is empty")
	case p.CreatedAt.IsZero():
		return fmt.Errorf("payment intent: creation time is missing")
	case !p.Capture.Valid():
		return fmt.Errorf("payment intent: unknown capture mode %q", p.Capture)
	case !p.OnDeadline.Valid():
		return fmt.Errorf("payment intent: unknown deadline action %q", p.OnDeadline)
	case p.OnDeadline != "" && !p.Capture.Manual():
		return fmt.Errorf("payment intent: a deadline action %q needs the manual capture mode", p.OnDeadline)
	}
	if _, err := NewMoney(p.Amount.Minor, p.Amount.Currency); err != nil {
		return fmt.Errorf("payment intent: %w", err)
	}
	return nil
}

var keyPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ValidKey reports whether key has the form of the idempotency keys we issue:
// a lower-case UUID string.
func ValidKey(key string) bool {
	return keyPattern.MatchString(key)
}

// LegacyCardHash returns the hex SHA-256 of a card token, the card hash
// before hashes were keyed. Anyone can compute it, and for a token of little
// entropy reverse it, so nothing stores it any more: it serves only to
// check a token against the hash in the input of a workflow started before
// (PaymentIntent.CardHashKeyed false), and CardHasher.Rekey turns a stored
// one into the keyed hash.
func LegacyCardHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// MerchantReference builds the reference sent with every charge:
// "<prefix>-<orderID>-<key without dashes>", such as
// "bookstore-1001-01a1d96ce23d77bf801e9df969c1d378". Anyone holding a
// reference can find the order and the workflow.
func MerchantReference(prefix string, orderID int64, key string) string {
	return prefix + "-" + strconv.FormatInt(orderID, 10) + "-" + strings.ReplaceAll(key, "-", "")
}

var referencePattern = regexp.MustCompile(`^([a-z][a-z0-9_]*)-([1-9][0-9]*)-([0-9a-f]{32})$`)

// ParseMerchantReference splits a reference built by MerchantReference into
// its prefix, order ID and key (with its dashes restored).
func ParseMerchantReference(ref string) (prefix string, orderID int64, key string, err error) {
	m := referencePattern.FindStringSubmatch(ref)
	if m == nil {
		return "", 0, "", fmt.Errorf("merchant reference %q is not of the form <prefix>-<order>-<key>", ref)
	}
	orderID, err = strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return "", 0, "", fmt.Errorf("merchant reference %q: order ID out of range", ref)
	}
	k := m[3]
	key = k[0:8] + "-" + k[8:12] + "-" + k[12:16] + "-" + k[16:20] + "-" + k[20:32]
	return m[1], orderID, key, nil
}

// ValidReferencePrefix reports whether prefix can start a merchant reference:
// a lower-case letter, then lower-case letters, digits or underscores.
func ValidReferencePrefix(prefix string) bool {
	return referencePattern.MatchString(prefix + "-1-" + strings.Repeat("0", 32))
}
