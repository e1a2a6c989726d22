//! Tenancy as structure: a handler under `/workspaces/{workspace_id}` is
//! handed a [`Scope`] (the workspace as the caller may see it, and the caller),
//! loaded inside the handler's own transaction by `Ctx::read_in` /
//! `Ctx::write_in`. No handler looks a workspace up by itself.
//!
//! A read finds the workspace in [`Scopes`] when no commit since it was kept
//! changed a workspace or an organization (`Db::same` of
//! `Tables::WORKSPACES`, at the read's own position), so a workspace's
//! documents, read over and over while results are written all day, cost
//! one query each, not two. Whether the caller may see it is decided at
//! every request, from the workspace as the read's position holds it.

use std::sync::Arc;

use crate::db::cache::{Key, ReadCache, Weight};
use crate::db::stamp::Stamp;
use crate::db::{Conn, Db, Tables};

use super::{State, Workspace, not_found, store};
use crate::auth::principal::Principal;
use crate::error::ApiResult;

/// A workspace the caller may see, and the caller.
pub struct Scope {
    pub user: Arc<Principal>,
    /// Shared with the caches that keep it (`Scopes`, the writer's `db::kept`).
    pub workspace: Arc<Workspace>,
}

impl Scope {
    /// The workspace's id.
    pub fn id(&self) -> &str {
        &self.workspace.id
    }

    /// The caller's party organization in this workspace (see
    /// [`Workspace::party_of`]).
    pub fn party(&self) -> Option<String> {
        self.workspace.party_of(&self.user)
    }
}

/// The workspace `id` if it exists and `user` may see it; 404 otherwise, so a
/// foreign tenant cannot tell the two apart.
pub fn load(conn: &Conn, user: Arc<Principal>, id: &str) -> ApiResult<Scope> {
    seen(workspace(conn, id)?, user, id)
}

/// [`load`] in a read at position `read_at`: the workspace as [`Scopes`]
/// keeps it, or read and kept.
pub fn load_read(
    conn: &Conn,
    db: &Db,
    scopes: &Scopes,
    read_at: Option<Stamp>,
    user: Arc<Principal>,
    id: &str,
) -> ApiResult<Scope> {
    let same = |then, now| db.same(Tables::WORKSPACES, Some(then), Some(now));
    let Some(key) = Key::new(&[id]) else {
        return load(conn, user, id);
    };
    if let Some(kept) = scopes.0.get(read_at, &key, &same) {
        return seen(Some(kept), user, id);
    }
    let found = store::get(conn, id)?.map(Arc::new);
    if let Some(workspace) = &found {
        scopes.0.insert(read_at, key, workspace.clone(), &same);
    }
    seen(found, user, id)
}

/// The workspace `id` as [`Scopes`] keeps it for position `at`, if it does:
/// for an answer kept without a read (`Ctx::kept_document`).
pub fn kept(db: &Db, scopes: &Scopes, at: Option<Stamp>, id: &str) -> Option<Arc<Workspace>> {
    let same = |then, now| db.same(Tables::WORKSPACES, Some(then), Some(now));
    scopes.0.get(at, &Key::new(&[id])?, &same)
}

/// A [`Scope`] of `found` for `user` if it may see it; 404 otherwise.
fn seen(found: Option<Arc<Workspace>>, user: Arc<Principal>, id: &str) -> ApiResult<Scope> {
    match found {
        Some(workspace) if workspace.visible_to(&user) => Ok(Scope { user, workspace }),
        _ => Err(not_found(id)),
    }
}

/// The workspaces reads found lately, each kept at the position it was read
/// at, while no commit changes a workspace or an organization.
pub struct Scopes(ReadCache<Arc<Workspace>>);

/// The bytes [`Scopes`] may hold: about 4,000 workspaces.
const SCOPES_BUDGET: usize = 2 * 1024 * 1024;

impl Scopes {
    pub fn new() -> Scopes {
        Scopes(ReadCache::new(SCOPES_BUDGET))
    }
}

impl Default for Scopes {
    fn default() -> Scopes {
        Scopes::new()
    }
}

impl Weight for Arc<Workspace> {
    /// Its strings (ids, a description, tenants) and the record around them.
    fn weight(&self) -> usize {
        let texts = [
            Some(&self.id),
            self.description.as_ref(),
            self.client.id.as_ref(),
            self.client.xref.as_ref(),
            self.vendor.id.as_ref(),
            self.vendor.xref.as_ref(),
            self.client_audience.as_ref(),
            self.vendor_audience.as_ref(),
        ];
        std::mem::size_of::<Workspace>() + texts.iter().flatten().map(|t| t.len()).sum::<usize>()
    }
}

/// The workspace `id` as `user` may answer its invitation: one it may see, or
/// a pending one its tenant is invited to (which it may not see yet); 404
/// otherwise. Whether `user` is the one to answer is the handler's to say.
pub fn load_invitation(conn: &Conn, user: Arc<Principal>, id: &str) -> ApiResult<Scope> {
    match workspace(conn, id)? {
        Some(workspace)
            if workspace.visible_to(&user)
                || (workspace.state == State::Pending && workspace.answered_by(&user)) =>
        {
            Ok(Scope { user, workspace })
        }
        _ => Err(not_found(id)),
    }
}

/// The workspace `id`; in a write, as the writer keeps it between writes
/// (`db::kept`: the scope is a write's first read; shared, not copied).
fn workspace(conn: &Conn, id: &str) -> crate::db::Result<Option<Arc<Workspace>>> {
    crate::db::kept::row("workspaces", id, || Ok(store::get(conn, id)?.map(Arc::new)))
}

/// Whether `user` may see the workspace `id`: for a record elsewhere that
/// names a workspace in its body (a webhook's), which answers 400 naming the
/// field, not 404.
pub fn visible(conn: &Conn, user: &Principal, id: &str) -> crate::db::Result<bool> {
    Ok(store::get(conn, id)?.is_some_and(|w| w.visible_to(user)))
}
