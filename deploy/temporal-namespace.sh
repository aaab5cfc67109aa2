#!/bin/sh
# Creates the namespace of the payment workflows and the search attributes
# that let the Web UI find attempts by order, status, reference and charge.
# Existing ones are kept, so it is safe on every start.
set -eu
export TEMPORAL_ADDRESS=temporal:7233
until temporal operator cluster health >/dev/null 2>&1; do sleep 1; done
temporal operator namespace describe --namespace default >/dev/null 2>&1 ||
	temporal operator namespace create --namespace default --retention 7d
for attr in OrderId PaymentStatus MerchantReference ProviderPaymentId; do
	temporal operator search-attribute create --namespace default --name "$attr" --type Keyword 2>/dev/null || true
done
temporal operator search-attribute list --namespace default
