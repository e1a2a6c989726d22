//! Tenancy as structure: a handler under `/workspaces/{workspace_id}` is
//! handed a [`Scope`] (the workspace as the caller may see it, and the caller),
//! loaded inside the handler's own transaction by `Ctx::read_in` /
//! `Ctx::write_in`. No handler looks a workspace up by itself.

use std::sync::Arc;

use crate::db::Conn;

use super::{State, Workspace, not_found, store};
use crate::auth::principal::Principal;
use crate::error::ApiResult;

/// A workspace the caller may see, and the caller.
pub struct Scope {
    pub user: Arc<Principal>,
    pub workspace: Workspace,
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
    match workspace(conn, id)? {
        Some(workspace) if workspace.visible_to(&user) => Ok(Scope { user, workspace }),
        _ => Err(not_found(id)),
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
/// (`db::kept`: the scope is a write's first read).
fn workspace(conn: &Conn, id: &str) -> crate::db::Result<Option<Workspace>> {
    crate::db::kept::row("workspaces", id, || store::get(conn, id))
}

/// Whether `user` may see the workspace `id`: for a record elsewhere that
/// names a workspace in its body (a webhook's), which answers 400 naming the
/// field, not 404.
pub fn visible(conn: &Conn, user: &Principal, id: &str) -> crate::db::Result<bool> {
    Ok(store::get(conn, id)?.is_some_and(|w| w.visible_to(user)))
}
