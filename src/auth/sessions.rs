//! Session keys: 32 random bytes, base64url, handed to the client once; the
//! store keeps only their SHA-256. A key dies after the idle timeout (sliding)
//! or the absolute lifetime, whichever comes first, or at logout.

use crate::db::{Conn, OptionalExtension, params};
use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};

use std::sync::Arc;

use super::principal::Principal;

pub struct NewKey {
    pub key: String,
    pub hash: Vec<u8>,
}

pub fn new_key() -> NewKey {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system random source failed");
    let key = crate::base64url::encode(&bytes);
    debug_assert!(looks_like_key(&key));
    let hash = hash_key(&key);
    NewKey { key, hash }
}

/// Characters of a key: 32 bytes in unpadded base64url.
pub const KEY_LENGTH: usize = 43;

/// Whether a text has the shape of a key (not whether one is live).
pub fn looks_like_key(text: &str) -> bool {
    text.len() == KEY_LENGTH
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The SHA-256 of a key, as the store keeps it. The last key hashed on each
/// thread is remembered with its hash: an integration sends the same key
/// request after request, and the hash was a tenth of a cached read's
/// handling. (The key itself is in the request's memory anyway.)
pub fn hash_key(key: &str) -> Vec<u8> {
    thread_local! {
        static LAST: std::cell::RefCell<(String, Vec<u8>)> =
            const { std::cell::RefCell::new((String::new(), Vec::new())) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != key || last.1.is_empty() {
            last.1 = digest(&SHA256, key.as_bytes()).as_ref().to_vec();
            last.0.clear();
            last.0.push_str(key);
        }
        last.1.clone()
    })
}

pub fn insert(conn: &Conn, hash: &[u8], account_id: i64, now: i64) -> crate::db::Result<()> {
    conn.prepare_cached(
        "INSERT INTO sessions (key_hash, account_id, created_at, last_used_at) VALUES (?1, ?2, ?3, ?3)",
    )?
    .execute(params![hash, account_id, now])?;
    Ok(())
}

/// A live session and when it was last used.
#[derive(Clone, Debug)]
pub struct Found {
    /// Shared: every request of the key gets the same one, without copying.
    pub principal: Arc<Principal>,
    pub created_at: i64,
    pub last_used_at: i64,
}

pub fn find(conn: &Conn, hash: &[u8]) -> crate::db::Result<Option<Found>> {
    conn.prepare_cached(
        "SELECT a.id, a.username, a.tenant, a.is_admin, s.created_at, s.last_used_at \
         FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.key_hash = ?1",
    )?
    .query_row([hash], |row| {
        Ok(Found {
            principal: Arc::new(Principal {
                account_id: row.get(0)?,
                username: row.get(1)?,
                tenant: row.get(2)?,
                is_admin: row.get(3)?,
            }),
            created_at: row.get(4)?,
            last_used_at: row.get(5)?,
        })
    })
    .optional()
}

pub fn touch(conn: &Conn, hash: &[u8], now: i64) -> crate::db::Result<()> {
    conn.prepare_cached(
        "UPDATE sessions SET last_used_at = CASE WHEN last_used_at > ?2 THEN last_used_at ELSE ?2 END WHERE key_hash = ?1",
    )?
    .execute(params![hash, now])?;
    Ok(())
}

pub fn delete(conn: &Conn, hash: &[u8]) -> crate::db::Result<bool> {
    super::confirmed::forget();
    Ok(conn
        .prepare_cached("DELETE FROM sessions WHERE key_hash = ?1")?
        .execute([hash])?
        == 1)
}

/// Drops sessions past either timeout, so the table does not grow forever.
pub fn purge_expired(conn: &Conn, now: i64, idle_ms: i64, max_ms: i64) -> crate::db::Result<usize> {
    super::confirmed::forget();
    conn.prepare_cached("DELETE FROM sessions WHERE last_used_at <= ?1 OR created_at <= ?2")?
        .execute(params![now - idle_ms, now - max_ms])
}

#[cfg(test)]
mod tests {
    /// The remembered hash is the hash of the key asked about, whatever was
    /// asked before.
    #[test]
    fn a_key_hash_is_its_sha256_whatever_came_before() {
        let sha = |key: &str| {
            ring::digest::digest(&ring::digest::SHA256, key.as_bytes())
                .as_ref()
                .to_vec()
        };
        for key in ["first-key", "first-key", "second-key", "first-key", ""] {
            assert_eq!(super::hash_key(key), sha(key), "{key}");
        }
    }
}
