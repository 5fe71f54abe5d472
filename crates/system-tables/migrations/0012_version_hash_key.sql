-- The key of content versions' item hashes (docs/security.md "Content versions"): a version's
-- `hash` and compare's `mainHash` are HMAC-SHA-256 of the main item's row under this key, so
-- nobody can test guesses of a field hidden from them against a hash they can read. The key is
-- 32 random bytes (SHA-256 of three random UUIDs; gen_random_uuid draws from the server's strong
-- random source), made once per database, the same for every replica, and stored as HMAC's
-- inner and outer padded keys (the key zero-padded to SHA-256's 64-byte block, XOR 0x36 and
-- XOR 0x5c). No collection serves this table. Hashes made before it (plain SHA-256) read as
-- outdated: compare, then promote with the new mainHash.
CREATE TABLE version_hash_key (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    ipad bytea NOT NULL,
    opad bytea NOT NULL
);

WITH k AS (
    SELECT sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8'))
           || decode(repeat('00', 32), 'hex') AS key
)
INSERT INTO version_hash_key (ipad, opad)
SELECT decode(string_agg(lpad(to_hex(get_byte(k.key, i) # 54), 2, '0'), '' ORDER BY i), 'hex'),
       decode(string_agg(lpad(to_hex(get_byte(k.key, i) # 92), 2, '0'), '' ORDER BY i), 'hex')
FROM k, generate_series(0, 63) AS i
GROUP BY k.key;
