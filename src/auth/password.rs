//! Password hashing: PBKDF2-HMAC-SHA256 with a random 16-byte salt and the
//! iteration count stored beside each hash, compared in constant time.

use std::num::NonZeroU32;

use ring::pbkdf2;
use ring::rand::{SecureRandom, SystemRandom};

/// The contract's default work factor.
pub const DEFAULT_ITERATIONS: u32 = 600_000;
const HASH_LEN: usize = 32;
const SALT_LEN: usize = 16;
static ALGORITHM: pbkdf2::Algorithm = pbkdf2::PBKDF2_HMAC_SHA256;

/// Shortest password `user add` and `user passwd` accept.
pub const MIN_PASSWORD_CHARS: usize = 8;

#[derive(Clone, Debug)]
pub struct PasswordHash {
    pub hash: Vec<u8>,
    pub salt: Vec<u8>,
    pub iterations: u32,
}

pub fn hash(password: &str, iterations: u32) -> PasswordHash {
    let mut salt = vec![0u8; SALT_LEN];
    SystemRandom::new()
        .fill(&mut salt)
        .expect("the system random source failed");
    let mut out = vec![0u8; HASH_LEN];
    pbkdf2::derive(
        ALGORITHM,
        NonZeroU32::new(iterations.max(1)).expect("at least one iteration"),
        &salt,
        password.as_bytes(),
        &mut out,
    );
    PasswordHash {
        hash: out,
        salt,
        iterations: iterations.max(1),
    }
}

/// Constant-time check of a password against a stored hash.
pub fn verify(stored: &PasswordHash, password: &str) -> bool {
    let Some(iterations) = NonZeroU32::new(stored.iterations) else {
        return false;
    };
    pbkdf2::verify(
        ALGORITHM,
        iterations,
        &stored.salt,
        password.as_bytes(),
        &stored.hash,
    )
    .is_ok()
}

/// Spends the same work as a real check, for an unknown username, so that the
/// answer's timing does not tell whether the account exists.
pub fn verify_nothing(iterations: u32, password: &str) {
    let decoy = PasswordHash {
        hash: vec![0u8; HASH_LEN],
        salt: vec![0u8; SALT_LEN],
        iterations: iterations.max(1),
    };
    let _ = verify(&decoy, password);
}

/// A random password for the first `admin` account.
pub fn random_password() -> String {
    let mut bytes = [0u8; 18];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system random source failed");
    crate::base64url::encode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_the_right_password_only() {
        let stored = hash("correct horse", 1000);
        assert!(verify(&stored, "correct horse"));
        assert!(!verify(&stored, "correct horsE"));
        assert_eq!(stored.salt.len(), 16);
        assert_eq!(stored.iterations, 1000);
    }

    #[test]
    fn same_password_gets_different_salts() {
        assert_ne!(hash("pw123456", 10).hash, hash("pw123456", 10).hash);
    }
}
