-- Card hashes become keyed (chargeonce.CardHasher). SQL cannot compute the
-- HMAC, so the process re-keys the stored hashes at start
-- (Store.RekeyCardHashes); this column marks the rows it has done. Rows
-- inserted from now on carry keyed hashes and set it.
ALTER TABLE payment_attempts ADD COLUMN card_hash_keyed INTEGER NOT NULL DEFAULT 0 CHECK (card_hash_keyed IN (0, 1));
