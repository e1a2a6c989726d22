//! SQL for workspaces.

use crate::db::Value as SqlValue;
use crate::db::{Conn, OptionalExtension, params};

use super::{Party, Role, State, Workspace};
use crate::auth::principal::Principal;
use crate::error::{ApiError, ApiResult};
use crate::listing::{FieldSql, ListQuery, Page, fetch_page};

const COLUMNS: &str = "w.id, w.description, w.client_id, w.client_xref, w.vendor_id, \
    w.vendor_xref, w.created_at, w.updated_at, \
    (SELECT audience FROM organizations WHERE id = w.client_id), \
    (SELECT audience FROM organizations WHERE id = w.vendor_id), \
    w.state, w.invited";

/// The client organization of `w` when it counts as a party (see
/// `Workspace::members`): not while it is invited and has not accepted.
const MEMBER_CLIENT: &str =
    "CASE WHEN w.state = 'active' OR w.invited IS DISTINCT FROM 'client' THEN w.client_id END";
/// The vendor's, likewise.
const MEMBER_VENDOR: &str =
    "CASE WHEN w.state = 'active' OR w.invited IS DISTINCT FROM 'vendor' THEN w.vendor_id END";
/// The invited organization of a pending workspace.
const INVITED_PENDING: &str = "CASE WHEN w.state <> 'pending' THEN NULL \
    WHEN w.invited = 'client' THEN w.client_id WHEN w.invited = 'vendor' THEN w.vendor_id END";

/// A stored name that is not one of `keys`: a row this build cannot read.
fn unknown(column: usize, what: &str, value: &str) -> crate::db::Error {
    crate::db::Error::conversion(column, format!("unknown workspace {what} \"{value}\""))
}

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Workspace> {
    let state: String = row.get(10)?;
    let invited: Option<String> = row.get(11)?;
    Ok(Workspace {
        id: row.get(0)?,
        description: row.get(1)?,
        client: Party {
            id: row.get(2)?,
            xref: row.get(3)?,
        },
        vendor: Party {
            id: row.get(4)?,
            xref: row.get(5)?,
        },
        created_at: row.get(6)?,
        updated_at: row.get(7)?,
        client_audience: row.get(8)?,
        vendor_audience: row.get(9)?,
        state: State::from_key(&state).ok_or_else(|| unknown(10, "state", &state))?,
        invited: match invited {
            None => None,
            Some(role) => Some(Role::from_key(&role).ok_or_else(|| unknown(11, "party", &role))?),
        },
    })
}

pub fn get(conn: &Conn, id: &str) -> crate::db::Result<Option<Workspace>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM workspaces w WHERE w.id = ?1"
    ))?
    .query_row([id], from_row)
    .optional()
}

/// A workspace row of `table`: `workspaces`, or the change log's copy of a
/// deleted row (see `changes::capture`).
pub fn get_from(conn: &Conn, table: &str, id: &str) -> crate::db::Result<Option<Workspace>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM {table} w WHERE w.id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

pub fn insert(conn: &Conn, ws: &Workspace) -> crate::db::Result<()> {
    conn.prepare_cached(
        "INSERT INTO workspaces (id, description, client_id, client_xref, vendor_id, vendor_xref, \
         created_at, updated_at, state, invited) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        ws.id,
        ws.description,
        ws.client.id,
        ws.client.xref,
        ws.vendor.id,
        ws.vendor.xref,
        ws.created_at,
        ws.updated_at,
        ws.state.key(),
        ws.invited.map(Role::key),
    ])?;
    refresh_members(conn, &ws.id)
}

/// Keeps `workspace_members` true for the workspace: the tenants owning its
/// parties that count (`Workspace::members`, the same SQL as every other
/// reading of the rule), for the list of a tenant's workspaces by index.
/// Called by every write that can change who counts: a new workspace and an
/// answered invitation (`release_invited` only clears parties that did not
/// count); a deleted workspace takes its rows with it.
fn refresh_members(conn: &Conn, id: &str) -> crate::db::Result<()> {
    let gone = drop_members(conn, id)?;
    let added = conn
        .prepare_cached(&format!(
            "INSERT INTO workspace_members (tenant, workspace_id, created_at) \
             SELECT o.audience, w.id, w.created_at FROM workspaces w \
             JOIN organizations o ON o.id IN ({MEMBER_CLIENT}, {MEMBER_VENDOR}) WHERE w.id = ?1 \
             ON CONFLICT DO NOTHING RETURNING tenant"
        ))?
        .query_map([id], |row| row.get::<_, String>(0))?
        .collect::<crate::db::Result<Vec<String>>>()?;
    for tenant in &added {
        if !gone.contains(tenant) {
            count_member(conn, tenant, 1)?;
        }
    }
    for tenant in &gone {
        if !added.contains(tenant) {
            count_member(conn, tenant, -1)?;
        }
    }
    Ok(())
}

/// Deletes the workspace's membership rows; answers their tenants, whose
/// counts the caller moves.
fn drop_members(conn: &Conn, id: &str) -> crate::db::Result<Vec<String>> {
    conn.prepare_cached("DELETE FROM workspace_members WHERE workspace_id = ?1 RETURNING tenant")?
        .query_map([id], |row| row.get::<_, String>(0))?
        .collect()
}

/// Moves the tenant's count of workspaces (`tenant_workspaces`) by `delta`,
/// as its rows in `workspace_members` just moved.
fn count_member(conn: &Conn, tenant: &str, delta: i64) -> crate::db::Result<()> {
    // A decrease only ever meets a row its increase made; an increase may be
    // the tenant's first (the row's own CHECK keeps a count from going below
    // zero, and SQLite checks it on an upsert's proposed row too).
    let sql = if delta < 0 {
        "UPDATE tenant_workspaces SET workspaces = workspaces + ?2 WHERE tenant = ?1"
    } else {
        "INSERT INTO tenant_workspaces (tenant, workspaces) VALUES (?1, ?2) \
         ON CONFLICT (tenant) DO UPDATE SET workspaces = tenant_workspaces.workspaces + ?2"
    };
    conn.prepare_cached(sql)?.execute(params![tenant, delta])?;
    Ok(())
}

/// How many workspaces the tenant sees: the total of its workspace list
/// without a filter.
pub fn count_of_tenant(conn: &Conn, tenant: &str) -> crate::db::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT workspaces FROM tenant_workspaces WHERE tenant = ?1")?
        .query_row([tenant], |row| row.get::<_, i64>(0))
        .optional()?
        .unwrap_or(0))
}

/// Records the answer to a workspace's invitation.
pub fn update_state(conn: &Conn, ws: &Workspace) -> crate::db::Result<()> {
    conn.prepare_cached("UPDATE workspaces SET state = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![ws.id, ws.state.key(), ws.updated_at])?;
    refresh_members(conn, &ws.id)
}

/// How many workspaces hold the organization `org` as a party that counts
/// (an invited one that has not accepted does not).
pub fn count_holding(conn: &Conn, org: &str) -> crate::db::Result<i64> {
    conn.prepare_cached(&format!(
        "SELECT count(*) FROM workspaces w WHERE ?1 IN ({MEMBER_CLIENT}, {MEMBER_VENDOR})"
    ))?
    .query_row([org], |row| row.get(0))
}

/// Lets go of the organization `org` where it was invited and has not
/// accepted, before it is deleted: the party is cleared, and a pending
/// invitation ends as declined (nobody is left to answer it).
pub fn release_invited(conn: &Conn, org: &str, now: i64) -> crate::db::Result<()> {
    for role in [Role::Client, Role::Vendor] {
        let column = format!("{}_id", role.key());
        conn.prepare_cached(&format!(
            "UPDATE workspaces SET {column} = NULL, state = 'declined', updated_at = ?2 \
             WHERE {column} = ?1 AND invited = ?3 AND state <> 'active'"
        ))?
        .execute(params![org, now, role.key()])?;
    }
    Ok(())
}

pub fn update_description(conn: &Conn, ws: &Workspace) -> crate::db::Result<()> {
    conn.prepare_cached("UPDATE workspaces SET description = ?2, updated_at = ?3 WHERE id = ?1")?
        .execute(params![ws.id, ws.description, ws.updated_at])?;
    Ok(())
}

/// Removes an empty workspace with its catalogs and synonyms; 409 when it
/// still holds documents.
pub fn delete(conn: &Conn, id: &str) -> ApiResult<()> {
    let documents: i64 = conn
        // Every document is a job or belongs to one of the workspace's jobs.
        .prepare_cached("SELECT count(*) FROM documents WHERE workspace_id = ?1 AND kind = 'job'")?
        .query_row([id], |row| row.get(0))?;
    if documents > 0 {
        return Err(ApiError::conflict(
            "workspace_not_empty",
            "Workspace is not empty",
        ));
    }
    for tenant in drop_members(conn, id)? {
        count_member(conn, &tenant, -1)?;
    }
    for sql in [
        "DELETE FROM synonyms WHERE workspace_id = ?1",
        "DELETE FROM catalog_items WHERE workspace_id = ?1",
        "DELETE FROM workspaces WHERE id = ?1",
    ] {
        conn.prepare_cached(sql)?.execute([id])?;
    }
    Ok(())
}

/// Workspaces the caller may see, filtered and paged: every one for an
/// administrator, else those of its tenant, read from `workspace_members` in
/// the order of its index (tenant, created_at, workspace_id), so that a page
/// costs the same for a tenant of one workspace and of ten thousand.
pub fn list(
    conn: &Conn,
    user: &Principal,
    query: &ListQuery,
) -> crate::db::Result<Page<Workspace>> {
    if user.is_admin {
        // In the order of its index, whatever the statistics say (taken
        // while the table held a row, they made the planner sort them all).
        return fetch_page(
            conn,
            COLUMNS,
            &format!(
                "FROM workspaces w{}",
                conn.dialect().indexed_by("workspaces_created")
            ),
            "1 = 1",
            vec![],
            query,
            from_row,
        );
    }
    // The order's creation time and id are the membership row's (the same
    // values), so the index gives the order.
    let mut query = query.clone();
    for (term, _) in &mut query.sort {
        match term {
            FieldSql::Column("created_at") => *term = FieldSql::Column("m.created_at"),
            FieldSql::Column("id") => *term = FieldSql::Column("m.workspace_id"),
            _ => {}
        }
    }
    // Without a filter, the total is the tenant's count, kept with its rows.
    if query.filters.is_empty() {
        query.kept_total = Some(count_of_tenant(conn, &user.tenant)?);
    }
    fetch_page(
        conn,
        COLUMNS,
        // LEFT JOIN (every member row has its workspace: a foreign key): a
        // count without a filter on the workspace's columns then reads the
        // membership index alone (SQLite omits an unused LEFT JOIN on a key).
        // The workspace is found by its key, whatever the statistics say:
        // statistics taken while the table held one row made the planner
        // scan it for every member instead. And the members are read in the
        // order of their list index: statistics taken on one row and then
        // refreshed for the tables that grew made it search the primary key
        // and sort the page.
        &format!(
            "FROM workspace_members m{} LEFT JOIN workspaces w{} ON w.id = m.workspace_id",
            conn.dialect().indexed_by("workspace_members_list"),
            conn.dialect().indexed_by("sqlite_autoindex_workspaces_1")
        ),
        "m.tenant = ?",
        vec![SqlValue::Text(user.tenant.clone())],
        &query,
        from_row,
    )
}

/// Pending invitations the caller answers: those to its tenant's
/// organizations (every pending one for an admin), filtered and paged.
pub fn invitations(
    conn: &Conn,
    user: &Principal,
    query: &ListQuery,
) -> crate::db::Result<Page<Workspace>> {
    page(
        conn,
        user,
        query,
        "w.state = 'pending'",
        &format!("({INVITED_PENDING}) IN (SELECT id FROM organizations WHERE audience = ?)"),
    )
}

/// One page of workspaces matching `condition`, and for a caller who is not
/// an administrator also `of_tenant` (which takes the caller's tenant as its
/// one parameter).
fn page(
    conn: &Conn,
    user: &Principal,
    query: &ListQuery,
    condition: &str,
    of_tenant: &str,
) -> crate::db::Result<Page<Workspace>> {
    let mut params: Vec<SqlValue> = Vec::new();
    let mut condition = condition.to_string();
    if !user.is_admin {
        condition.push_str(" AND ");
        condition.push_str(of_tenant);
        params.push(SqlValue::Text(user.tenant.clone()));
    }
    fetch_page(
        conn,
        COLUMNS,
        "FROM workspaces w",
        &condition,
        params,
        query,
        from_row,
    )
}
