//! Bearer credentials (errors-and-auth.md §2): `nexus-v1-<credential_public_id>.<secret>`, the
//! secret 32 random bytes in base64url. Only SHA-256 of the secret is stored; verification
//! looks the credential up by id and compares hashes in constant time.

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

const PREFIX: &str = "nexus-v1-";

/// A freshly minted bearer: the token is shown once, the hash is stored.
pub struct Minted {
    pub public_id: Uuid,
    pub token: String,
    pub secret_sha256: String,
}

/// Mints a new bearer with a fresh id and a 32-byte secret.
pub fn mint() -> Minted {
    let public_id = crate::time::new_id();
    let secret_bytes: [u8; 32] = rand::random();
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret_bytes);
    Minted {
        public_id,
        token: format!("{PREFIX}{public_id}.{secret}"),
        secret_sha256: hash_secret(&secret),
    }
}

/// Lowercase hex SHA-256 of a secret.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Splits a bearer into its credential id and secret. `None` for anything malformed.
pub fn parse_bearer(token: &str) -> Option<(Uuid, &str)> {
    let rest = token.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('.')?;
    if secret.is_empty() || id.len() != 36 {
        return None;
    }
    let id = Uuid::parse_str(id).ok()?;
    Some((id, secret))
}

/// Extracts the token from an `Authorization` header value (`Bearer …` or `Token …`).
pub fn token_from_header(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token"))
        .then_some(token)
        .filter(|t| !t.is_empty())
}

/// Constant-time comparison of a presented secret against a stored hash. The presented hash
/// is spelled into a stack buffer, the same lowercase hex as [`hash_secret`] (every transport
/// request verifies one).
pub fn secret_matches(secret: &str, stored_sha256: &str) -> bool {
    let mut presented = [0_u8; 64];
    // A 32-byte digest always fills the 64 hex digits exactly.
    hex::encode_to_slice(Sha256::digest(secret.as_bytes()), &mut presented).is_ok()
        && bool::from(presented.ct_eq(stored_sha256.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_parse_and_verify() {
        let m = mint();
        let (id, secret) = parse_bearer(&m.token).unwrap();
        assert_eq!(id, m.public_id);
        assert!(secret_matches(secret, &m.secret_sha256));
        assert!(!secret_matches("other", &m.secret_sha256));
        assert!(!m.token.contains(&m.secret_sha256));
        // 32 bytes base64url without padding is 43 characters
        assert_eq!(secret.len(), 43);
    }

    /// The stack-spelled comparison accepts exactly `hash_secret`'s spelling of the secret:
    /// not another secret's, not the same digest in capitals, not a prefix or an extension.
    #[test]
    fn a_secret_matches_its_own_hash_and_nothing_else() {
        for secret in ["", "a", "nexus", &"x".repeat(200)] {
            let stored = hash_secret(secret);
            assert!(secret_matches(secret, &stored), "{secret:?}");
            assert!(!secret_matches(&format!("{secret}!"), &stored));
            assert!(!secret_matches(secret, &stored.to_uppercase()));
            assert!(!secret_matches(secret, &stored[..63]));
            assert!(!secret_matches(secret, &format!("{stored}0")));
            assert!(!secret_matches(secret, ""));
        }
    }

    #[test]
    fn malformed_tokens_do_not_parse() {
        for t in [
            "",
            "nexus-v1-",
            "nexus-v2-x.y",
            "nexus-v1-not-a-uuid.secret",
            "nexus-v1-0190a000-0000-7000-8000-000000000001.",
            "abc",
        ] {
            assert!(parse_bearer(t).is_none(), "{t}");
        }
    }

    #[test]
    fn header_schemes() {
        assert_eq!(token_from_header("Bearer abc"), Some("abc"));
        assert_eq!(token_from_header("token abc"), Some("abc"));
        assert_eq!(token_from_header("Basic abc"), None);
        assert_eq!(token_from_header("Bearer "), None);
        assert_eq!(token_from_header("Bearer"), None);
    }
}
