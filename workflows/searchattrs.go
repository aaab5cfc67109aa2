package workflows

import (
	"cmp"
	"strconv"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"chargeonce"
)

// The search attributes of the money movements' workflows, which let the
// Temporal Web UI answer "which attempts and refunds are open, for which
// order, and for how long". These
// keys are their one definition, name and type: the workflow sets them, the
// checkout starts workflows with them, the embedded server and
// cmd/temporal-setup register them, and the worker and the API refuse to
// start against a namespace that lacks one (SearchAttributes).
var (
	// SearchAttrOrderID is the merchant's order ID.
	SearchAttrOrderID = temporal.NewSearchAttributeKeyKeyword("OrderId")
	// SearchAttrPaymentStatus is the attempt's status: open until settled.
	SearchAttrPaymentStatus = temporal.NewSearchAttributeKeyKeyword("PaymentStatus")
	// SearchAttrMerchantReference is the attempt's merchant reference.
	SearchAttrMerchantReference = temporal.NewSearchAttributeKeyKeyword("MerchantReference")
	// SearchAttrProviderPaymentID is the provider's charge ID, once known.
	SearchAttrProviderPaymentID = temporal.NewSearchAttributeKeyKeyword("ProviderPaymentId")
	// SearchAttrOperation is the kind of money movement, a
	// chargeonce.Operation such as "charge" or "refund". The starters set
	// it, and continue-as-new carries it; the workflows never change it.
	SearchAttrOperation = temporal.NewSearchAttributeKeyKeyword("Operation")
	// SearchAttrHoldDeadline is the deadline of the hold that a payment of
	// a manual capture keeps, when its deadline action ends the hold if
	// nobody captured or voided it. Set once the hold is authorized.
	SearchAttrHoldDeadline = temporal.NewSearchAttributeKeyTime("HoldDeadline")
	// SearchAttrProvider names the provider a payment attempt goes to. The
	// starters set it, and the attempt never changes provider: a payment
	// that moves to another provider does so as a new attempt.
	SearchAttrProvider = temporal.NewSearchAttributeKeyKeyword("Provider")
)

// searchAttributeKeys lists every key above.
var searchAttributeKeys = []temporal.SearchAttributeKey{
	SearchAttrOrderID, SearchAttrPaymentStatus, SearchAttrMerchantReference, SearchAttrProviderPaymentID, SearchAttrOperation,
	SearchAttrHoldDeadline, SearchAttrProvider,
}

// SearchAttributes returns every search attribute of the money movements'
// workflows with its type, as a namespace must have them.
func SearchAttributes() map[string]enums.IndexedValueType {
	m := make(map[string]enums.IndexedValueType, len(searchAttributeKeys))
	for _, k := range searchAttributeKeys {
		m[k.GetName()] = k.GetValueType()
	}
	return m
}

// StartSearchAttributes are the search attributes a payment workflow starts
// with: an open attempt of its order at its provider, a charge. Starting with them makes an
// attempt findable before its first workflow task, and spares the workflow
// an upsert.
func StartSearchAttributes(intent chargeonce.PaymentIntent) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		SearchAttrOrderID.ValueSet(strconv.FormatInt(intent.OrderID, 10)),
		SearchAttrPaymentStatus.ValueSet(string(chargeonce.AttemptOpen)),
		SearchAttrMerchantReference.ValueSet(intent.MerchantReference),
		SearchAttrOperation.ValueSet(string(chargeonce.OperationCharge)),
		SearchAttrProvider.ValueSet(cmp.Or(intent.Provider, chargeonce.DefaultProvider)),
	)
}

// RefundStartSearchAttributes are the search attributes a refund workflow
// starts with: a pending refund of its order (none for a charge of no
// order), under its merchant reference, a refund.
func RefundStartSearchAttributes(intent chargeonce.RefundIntent) temporal.SearchAttributes {
	updates := setting((&refund{intent: intent}).searchAttributes())
	return temporal.NewSearchAttributes(append(updates, SearchAttrOperation.ValueSet(string(chargeonce.OperationRefund)))...)
}
