//! Keys already confirmed in the writer's current transaction, so a batch of
//! writes by one key looks it up once. A leaf: sessions and accounts forget
//! the memo where they end a key; the session check reads and fills it.

use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// Keys confirmed in the writer's current transaction (its id, the key hashes).
    static CONFIRMED_IN_TRANSACTION: RefCell<(u64, Vec<Arc<Vec<u8>>>)> =
        const { RefCell::new((0, Vec::new())) };
}

/// Whether `hash` was confirmed in transaction `transaction`.
pub fn contains(transaction: u64, hash: &[u8]) -> bool {
    CONFIRMED_IN_TRANSACTION.with(|c| {
        let c = c.borrow();
        c.0 == transaction && c.1.iter().any(|h| h.as_slice() == hash)
    })
}

/// Notes `hash` as confirmed in transaction `transaction`.
pub fn insert(transaction: u64, hash: Arc<Vec<u8>>) {
    CONFIRMED_IN_TRANSACTION.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != transaction {
            *c = (transaction, Vec::new());
        }
        c.1.push(hash);
    });
}

/// Called where the writer ends a session: later writes of the same batch must
/// look their key up again.
pub fn forget() {
    CONFIRMED_IN_TRANSACTION.with(|c| c.borrow_mut().1.clear());
}
