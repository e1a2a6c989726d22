//! Who a request acts for, and who may call a route: the two facts of
//! authentication the rest of the service reads. A leaf: it imports nothing of
//! the service.

/// Who a request acts for.
#[derive(Clone, Debug)]
pub struct Principal {
    pub account_id: i64,
    pub username: String,
    pub tenant: String,
    pub is_admin: bool,
}

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone: login, health, the OpenAPI document.
    Public,
    /// A live session key is required.
    Session,
}
