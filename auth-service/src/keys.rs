//! The Ed25519 keys that sign tokens, which only auth-service holds.
//!
//! AUTH_KEYS_FILE holds one or more PKCS#8 PEM private keys; AUTH_SIGNING_KID picks the one that
//! signs (default: the first), and every key in the file is published for verification.
//! Rotation without downtime, in three rollouts of the same Secret:
//! 1. append a new key (`auth-service keygen >> keys.pem`): every replica publishes it, none
//!    signs with it yet, and verifiers learn it;
//! 2. set AUTH_SIGNING_KID to the new key's id: new tokens are signed with it, old ones still
//!    verify;
//! 3. after the longest token lifetime (SESSION_COOKIE_TTL), remove the old key.

use access_token::keys::{KeySet, kid_of};
use anyhow::{Context, bail};
use argon2::password_hash::rand_core::{OsRng, RngCore};
use cdapi_proto::v1::{PublicKey, PublicKeys};
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use jsonwebtoken::{EncodingKey, Header};
use serde::Serialize;

/// The signing key, and every published key.
pub struct Keys {
    signing_kid: String,
    encoding: EncodingKey,
    published: PublicKeys,
    verifying: KeySet,
}

/// A new random Ed25519 key.
fn generate() -> SigningKey {
    let mut seed = [0u8; 32];
    OsRng.fill_bytes(&mut seed);
    SigningKey::from_bytes(&seed)
}

/// A new key as PKCS#8 PEM, and its key id (`auth-service keygen`). Errors: encoding failed.
pub fn keygen_pem() -> anyhow::Result<(String, String)> {
    let key = generate();
    let pem = key.to_pkcs8_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)?;
    Ok((pem.to_string(), kid_of(key.verifying_key().as_bytes())))
}

impl Keys {
    /// The keys of AUTH_KEYS_FILE, or one generated key when there is no file (logged: tokens
    /// then die with the process). Errors: unreadable file, a block that is not an Ed25519 key,
    /// no key at all, or AUTH_SIGNING_KID naming no key of the file.
    pub fn load(file: Option<&std::path::Path>, signing_kid: Option<&str>) -> anyhow::Result<Self> {
        let keys = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading AUTH_KEYS_FILE {}", path.display()))?;
                parse_pem_keys(&text)?
            }
            None => {
                tracing::warn!(
                    "AUTH_KEYS_FILE is not set: signing with a key generated now; tokens will not survive a restart, and replicas would not accept each other's tokens"
                );
                vec![generate()]
            }
        };
        Self::from_keys(keys, signing_kid)
    }

    fn from_keys(keys: Vec<SigningKey>, signing_kid: Option<&str>) -> anyhow::Result<Self> {
        let Some(first) = keys.first() else { bail!("AUTH_KEYS_FILE holds no key") };
        let signing_kid = signing_kid.map(str::to_owned).unwrap_or_else(|| kid_of(first.verifying_key().as_bytes()));
        let signer = keys
            .iter()
            .find(|k| kid_of(k.verifying_key().as_bytes()) == signing_kid)
            .with_context(|| format!("AUTH_SIGNING_KID {signing_kid} names no key of AUTH_KEYS_FILE"))?;
        let encoding = EncodingKey::from_ed_der(signer.to_pkcs8_der()?.as_bytes());
        let mut verifying = KeySet::default();
        let mut published = PublicKeys::default();
        for k in &keys {
            let public = k.verifying_key().to_bytes();
            let kid = kid_of(&public);
            verifying.insert(&public);
            published.keys.push(PublicKey { signing: kid == signing_kid, kid, alg: "EdDSA".into(), public_key: public.to_vec().into() });
        }
        Ok(Self { signing_kid, encoding, published, verifying })
    }

    /// The key id new tokens carry.
    pub fn signing_kid(&self) -> &str {
        &self.signing_kid
    }

    /// What `GetPublicKeys` answers.
    pub fn published(&self) -> &PublicKeys {
        &self.published
    }

    /// Every published key, to verify tokens this service signed.
    pub fn verifying(&self) -> &KeySet {
        &self.verifying
    }

    /// Signs `claims` as an EdDSA JWT with the signing key's `kid`. Errors: serialisation.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some(self.signing_kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding)
    }
}

/// Every `PRIVATE KEY` PEM block of `text` as an Ed25519 key. Errors: a block that is not one.
fn parse_pem_keys(text: &str) -> anyhow::Result<Vec<SigningKey>> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let mut keys = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start..];
        let end = after.find(END).context("a PEM block of AUTH_KEYS_FILE has no END line")? + END.len();
        let key = SigningKey::from_pkcs8_pem(&after[..end]).map_err(|e| anyhow::anyhow!("AUTH_KEYS_FILE: not an Ed25519 PKCS#8 key: {e}"))?;
        keys.push(key);
        rest = &after[end..];
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_round_trips_and_picks_the_signing_key() -> anyhow::Result<()> {
        let (a, kid_a) = keygen_pem()?;
        let (b, kid_b) = keygen_pem()?;
        let keys = parse_pem_keys(&format!("{a}\n{b}"))?;
        assert_eq!(keys.len(), 2);
        let set = Keys::from_keys(keys.clone(), None)?;
        assert_eq!(set.signing_kid(), kid_a);
        let set = Keys::from_keys(keys.clone(), Some(&kid_b))?;
        assert_eq!(set.signing_kid(), kid_b);
        assert_eq!(set.published().keys.iter().filter(|k| k.signing).count(), 1);
        assert!(Keys::from_keys(keys, Some("nope")).is_err());
        Ok(())
    }

    #[test]
    fn signed_tokens_verify_with_the_published_keys() -> anyhow::Result<()> {
        let set = Keys::from_keys(vec![generate()], None)?;
        let now = access_token::now_ms() / 1000;
        let claims = access_token::Claims {
            id: "u".into(),
            role: None,
            app_access: false,
            admin_access: true,
            session: None,
            family: Some("f".into()),
            share: None,
            iat: now,
            exp: now + 60,
            iss: access_token::claims::ACCESS_ISSUER.into(),
        };
        let token = set.sign(&claims)?;
        let verified: access_token::Claims =
            KeySet::from_published(set.published()).verify(&token, access_token::claims::ACCESS_ISSUER).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        assert_eq!(verified, claims);
        let other = Keys::from_keys(vec![generate()], None)?;
        assert!(other.verifying().verify::<access_token::Claims>(&token, access_token::claims::ACCESS_ISSUER).is_err());
        Ok(())
    }
}
