//! Accounts in the store: the SQL behind login and the `quayside user` commands.

use crate::db::{Conn, OptionalExtension, params};

use super::password::PasswordHash;
use crate::error::{ApiError, ApiResult};

#[derive(Clone, Debug)]
pub struct Account {
    pub id: i64,
    pub username: String,
    pub tenant: String,
    pub is_admin: bool,
    pub password: PasswordHash,
    pub created_at: i64,
}

/// Usernames: 1-64 characters of `A-Z a-z 0-9 . _ @ -`.
pub fn valid_username(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
}

pub fn check_username(name: &str) -> ApiResult<()> {
    if valid_username(name) {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "username",
            "A username is 1 to 64 characters of letters, digits, '.', '_', '@' and '-'",
        ))
    }
}

const COLUMNS: &str = "id, username, tenant, is_admin, password_hash, password_salt, \
                       password_iterations, created_at";

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Account> {
    Ok(Account {
        id: row.get(0)?,
        username: row.get(1)?,
        tenant: row.get(2)?,
        is_admin: row.get(3)?,
        password: PasswordHash {
            hash: row.get(4)?,
            salt: row.get(5)?,
            iterations: row.get(6)?,
        },
        created_at: row.get(7)?,
    })
}

pub fn find(conn: &Conn, username: &str) -> crate::db::Result<Option<Account>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM accounts WHERE username = ?1"
    ))?
    .query_row([username], from_row)
    .optional()
}

pub fn list(conn: &Conn) -> crate::db::Result<Vec<Account>> {
    conn.prepare(&format!("SELECT {COLUMNS} FROM accounts ORDER BY username"))?
        .query_map([], from_row)?
        .collect()
}

pub fn count(conn: &Conn) -> crate::db::Result<i64> {
    conn.query_row("SELECT count(*) FROM accounts", [], |row| row.get(0))
}

pub fn insert(
    conn: &Conn,
    username: &str,
    tenant: &str,
    is_admin: bool,
    password: &PasswordHash,
    now: i64,
) -> crate::db::Result<i64> {
    conn.query_row(
        "INSERT INTO accounts (username, tenant, is_admin, password_hash, password_salt, \
         password_iterations, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
        params![
            username,
            tenant,
            is_admin,
            password.hash,
            password.salt,
            password.iterations,
            now
        ],
        |row| row.get(0),
    )
}

/// Sets a new password and ends every session of the account.
pub fn set_password(
    conn: &Conn,
    username: &str,
    password: &PasswordHash,
) -> crate::db::Result<bool> {
    super::confirmed::forget();
    let changed = conn.execute(
        "UPDATE accounts SET password_hash = ?2, password_salt = ?3, password_iterations = ?4 \
         WHERE username = ?1",
        params![username, password.hash, password.salt, password.iterations],
    )?;
    conn.execute(
        "DELETE FROM sessions WHERE account_id = (SELECT id FROM accounts WHERE username = ?1)",
        [username],
    )?;
    Ok(changed == 1)
}

/// Removes an account; its sessions go with it (foreign key cascade).
pub fn remove(conn: &Conn, username: &str) -> crate::db::Result<bool> {
    super::confirmed::forget();
    Ok(conn.execute("DELETE FROM accounts WHERE username = ?1", [username])? == 1)
}
