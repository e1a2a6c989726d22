//! SQL for the organization registry.

use crate::db::Value as SqlValue;
use crate::db::{Conn, Dialect, OptionalExtension, params};

use super::Organization;
use crate::error::{ApiError, ApiResult};
use crate::listing::{ListQuery, Page, fetch_page};

const COLUMNS: &str = "id, name, audience, category, created_at, updated_at";

fn from_row(row: &crate::db::Row<'_>) -> crate::db::Result<Organization> {
    Ok(Organization {
        id: row.get(0)?,
        name: row.get(1)?,
        audience: row.get(2)?,
        category: row.get(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
    })
}

pub fn get(conn: &Conn, id: &str) -> crate::db::Result<Option<Organization>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM organizations WHERE id = ?1"
    ))?
    .query_row([id], from_row)
    .optional()
}

/// An organization row of `table`: `organizations`, or the change log's copy
/// of a deleted row (see `changes::capture`).
pub fn get_from(conn: &Conn, table: &str, id: &str) -> crate::db::Result<Option<Organization>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM {table} WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()
}

fn check_name_free(conn: &Conn, name: &str, except_id: &str) -> ApiResult<()> {
    let taken: Option<String> = conn
        .prepare_cached("SELECT id FROM organizations WHERE name_folded = ?1 AND id <> ?2")?
        .query_row(params![crate::validate::fold(name), except_id], |row| {
            row.get(0)
        })
        .optional()?;
    match taken {
        Some(_) => Err(ApiError::conflict(
            "duplicate_name",
            format!(
                "An organization named \"{name}\" already exists (names are unique, ignoring case)"
            ),
        )),
        None => Ok(()),
    }
}

pub fn insert(conn: &Conn, org: &Organization) -> ApiResult<()> {
    check_name_free(conn, &org.name, &org.id)?;
    conn.prepare_cached(
        "INSERT INTO organizations (id, name, name_folded, audience, category, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        org.id,
        org.name,
        crate::validate::fold(&org.name),
        org.audience,
        org.category,
        org.created_at,
        org.updated_at
    ])?;
    Ok(())
}

pub fn update(conn: &Conn, org: &Organization) -> ApiResult<()> {
    check_name_free(conn, &org.name, &org.id)?;
    conn.prepare_cached(
        "UPDATE organizations SET name = ?2, name_folded = ?3, category = ?4, updated_at = ?5 WHERE id = ?1",
    )?
    .execute(params![
        org.id,
        org.name,
        crate::validate::fold(&org.name),
        org.category,
        org.updated_at
    ])?;
    Ok(())
}

/// Removes an organization that no workspace holds as a party and no job
/// names; 409 otherwise. An invitation it has not accepted does not hold it:
/// such a workspace lets go of it (`workspaces::store::release_invited`).
pub fn delete(conn: &Conn, id: &str) -> ApiResult<()> {
    let in_use = crate::workspaces::store::count_holding(conn, id)?;
    if in_use > 0 {
        return Err(ApiError::conflict(
            "organization_in_use",
            format!("The organization is a party of {in_use} workspace(s); delete those first"),
        ));
    }
    let jobs: i64 = conn
        .prepare_cached(&jobs_naming_sql(conn.dialect()))?
        .query_row([id], |row| row.get(0))?;
    if jobs > 0 {
        return Err(ApiError::conflict(
            "organization_in_use",
            format!("{jobs} job(s) name the organization as client or vendor; change those first"),
        ));
    }
    crate::workspaces::store::release_invited(conn, id, crate::clock::now_ms())?;
    conn.prepare_cached("DELETE FROM organizations WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// The SQL counting the jobs that name the organization `?1` as their
/// client or vendor, in `dialect`.
pub fn jobs_naming_sql(dialect: &Dialect) -> String {
    let id = dialect.body_param(crate::listing::FieldType::Text, "?1");
    format!(
        "SELECT count(*) FROM documents WHERE kind = 'job' AND ({} = {id} OR {} = {id})",
        dialect.body_path("$.client"),
        dialect.body_path("$.vendor"),
    )
}

/// Filters of the organization list beyond the common ones.
pub struct OrganizationFilter {
    /// Lower-cased substring of the name.
    pub name: Option<String>,
    /// `Some(None)`: only organizations without a category.
    pub category: Option<Option<String>>,
}

pub fn list(
    conn: &Conn,
    filter: &OrganizationFilter,
    query: &ListQuery,
) -> crate::db::Result<Page<Organization>> {
    let mut condition = String::from("1 = 1");
    let mut params: Vec<SqlValue> = Vec::new();
    if let Some(name) = &filter.name {
        condition.push_str(" AND ");
        condition.push_str(&conn.dialect().contains("name_folded", "?"));
        params.push(SqlValue::Text(name.clone()));
    }
    match &filter.category {
        Some(Some(category)) => {
            condition.push_str(" AND category = ?");
            params.push(SqlValue::Text(category.clone()));
        }
        Some(None) => condition.push_str(" AND category IS NULL"),
        None => {}
    }
    fetch_page(
        conn,
        COLUMNS,
        "FROM organizations",
        &condition,
        params,
        query,
        from_row,
    )
}
