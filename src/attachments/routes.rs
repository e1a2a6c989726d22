//! Handlers of a job's `files` (older paths) and any document's
//! `attachments` (`/v2`): one implementation, two views.

use rusqlite::Connection;

use super::{Attachment, content_disposition, media_type, store};
use crate::app::Ctx;
use crate::auth::Principal;
use crate::clock;
use crate::db::blobs::{self, BlobWriter};
use crate::documents::kinds::JOB;
use crate::documents::{self, Document};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;
use crate::http::multipart::Part;
use crate::http::range::{self, ByteRange};
use crate::listing::{self, ColumnFields, FieldType, Generation};
use crate::workspaces;

/// Which view a request uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// `/workspaces/{workspace_id}/jobs/{job_id}/files[/{file_id}]`
    JobFiles,
    /// `/v2/workspaces/{workspace_id}/documents/{document_id}/attachments[/{attachment_id}]`
    Attachments,
}

const FIELDS: ColumnFields = ColumnFields(&[
    ("caption", "a.caption", FieldType::Text),
    ("format", "a.format", FieldType::Text),
    ("size", "b.size", FieldType::Number),
    (
        "clientReferenceNumber",
        "a.client_reference_number",
        FieldType::Text,
    ),
    (
        "vendorReferenceNumber",
        "a.vendor_reference_number",
        FieldType::Text,
    ),
    ("description", "a.description", FieldType::Text),
]);

impl View {
    fn document_param(self) -> &'static str {
        match self {
            View::JobFiles => "job_id",
            View::Attachments => "document_id",
        }
    }

    fn item_param(self) -> &'static str {
        match self {
            View::JobFiles => "file_id",
            View::Attachments => "attachment_id",
        }
    }

    fn generation(self) -> Generation {
        match self {
            View::JobFiles => Generation::Older,
            View::Attachments => Generation::V2,
        }
    }

    fn render(self, a: &Attachment) -> serde_json::Value {
        match self {
            View::JobFiles => a.descriptor(),
            View::Attachments => a.envelope(),
        }
    }
}

struct Target {
    workspace: String,
    document: String,
    item: String,
}

fn target(ctx: &Ctx, view: View) -> Target {
    Target {
        workspace: ctx.req.param("workspace_id").to_string(),
        document: ctx.req.param(view.document_param()).to_string(),
        item: ctx.req.param(view.item_param()).to_string(),
    }
}

/// The document the files hang on, in a workspace the caller may see.
fn locate(conn: &Connection, user: &Principal, view: View, target: &Target) -> ApiResult<Document> {
    let ws = workspaces::load_visible(conn, user, &target.workspace)?;
    let doc = match view {
        View::JobFiles => documents::store::get(conn, &ws.id, &JOB, None, &target.document)?,
        View::Attachments => documents::store::get_any(conn, &ws.id, &target.document)?,
    };
    doc.ok_or_else(|| {
        ApiError::not_found(format!(
            "No document with id \"{}\" in this workspace",
            target.document
        ))
    })
}

fn load(conn: &Connection, user: &Principal, view: View, target: &Target) -> ApiResult<Attachment> {
    let doc = locate(conn, user, view, target)?;
    store::get(conn, &doc.id, &target.item)?.ok_or_else(|| {
        ApiError::not_found(format!(
            "No file with id \"{}\" on this document",
            target.item
        ))
    })
}

/// `GET`: the document's files.
pub async fn list(ctx: Ctx, view: View) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let query = listing::parse(ctx.req.query_pairs(), view.generation(), &FIELDS, &[])?;
    let target = target(&ctx, view);
    let (total, items) = ctx
        .read(move |conn| {
            let doc = locate(conn, &user, view, &target)?;
            Ok(store::list(conn, &doc.id, &query)?)
        })
        .await?;
    let rendered: Vec<_> = items.iter().map(|a| view.render(a)).collect();
    Ok(Response::json(200, &rendered).header("x-total-count", &total.to_string()))
}

/// Optional v2 upload details, from the query string.
#[derive(Default)]
struct References {
    client: Option<String>,
    vendor: Option<String>,
    description: Option<String>,
}

fn references(ctx: &Ctx, view: View) -> ApiResult<References> {
    let mut refs = References::default();
    for (name, value) in ctx.req.query_pairs() {
        let slot = match (view, name.as_str()) {
            (_, "api_key") => continue,
            (View::Attachments, "clientReferenceNumber") => &mut refs.client,
            (View::Attachments, "vendorReferenceNumber") => &mut refs.vendor,
            (View::Attachments, "description") => &mut refs.description,
            _ => {
                return Err(ApiError::invalid_query(
                    name,
                    format!("Unknown query parameter `{name}` for an upload"),
                ));
            }
        };
        if value.chars().count() > 4000 {
            return Err(ApiError::invalid_query(
                name,
                format!("`{name}` is longer than 4000 characters"),
            ));
        }
        *slot = Some(value.clone());
    }
    Ok(refs)
}

/// Streams one `file` part into a new blob.
async fn store_part(ctx: &Ctx, part: &mut Part) -> ApiResult<blobs::WrittenBlob> {
    let mut writer = BlobWriter::create(&ctx.app.db).await?;
    loop {
        match part.chunk().await {
            Ok(Some(bytes)) => {
                if let Err(err) = writer.write(bytes).await {
                    writer.abort().await;
                    return Err(err);
                }
            }
            Ok(None) => break,
            Err(err) => {
                writer.abort().await;
                return Err(err);
            }
        }
    }
    writer.finish().await
}

/// `POST`: `multipart/form-data` with one part named `file`. The bytes stream
/// into the store as they arrive; the file is recorded only once all are in.
pub async fn upload(mut ctx: Ctx, view: View) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let target = target(&ctx, view);
    let refs = references(&ctx, view)?;
    // Fail fast, before reading any bytes, when the document is not there.
    {
        let (user, target) = (user.clone(), target_clone(&target));
        ctx.read(move |conn| locate(conn, &user, view, &target).map(|_| ()))
            .await?;
    }
    let limit = ctx.app.settings.max_upload_bytes;
    let mut multipart = ctx.req.multipart(limit).await?;
    let mut stored: Option<(blobs::WrittenBlob, String, String)> = None;
    while let Some(mut part) = multipart.next_part().await? {
        let name = part.name().unwrap_or("").to_string();
        if name != "file" || stored.is_some() {
            if let Some((blob, _, _)) = stored.take() {
                discard(&ctx, &blob.id).await;
            }
            return Err(ApiError::invalid(
                name.clone(),
                if name == "file" {
                    "Send exactly one part named `file`".to_string()
                } else {
                    format!("Unknown part `{name}`; the body takes one part named `file`")
                },
            ));
        }
        let caption = part
            .file_name()
            .filter(|n| !n.is_empty())
            .unwrap_or("file")
            .to_string();
        let format = media_type(part.content_type().as_deref(), &caption);
        let blob = store_part(&ctx, &mut part).await?;
        stored = Some((blob, caption, format));
    }
    let Some((blob, caption, format)) = stored else {
        return Err(crate::validate::missing("file"));
    };
    let blob_id = blob.id.clone();
    let recorded = ctx
        .write(move |conn| {
            // Checked again: the workspace or document may have gone meanwhile.
            let doc = locate(conn, &user, view, &target)?;
            blobs::mark_complete(conn, &blob)?;
            let now = clock::now_ms();
            let attachment = Attachment {
                id: crate::ids::new_id(),
                workspace_id: doc.workspace_id.clone(),
                document_id: doc.id.clone(),
                blob_id: blob.id.clone(),
                caption,
                format,
                size: blob.size as i64,
                sha256: blob.sha256.clone(),
                client_reference_number: refs.client,
                vendor_reference_number: refs.vendor,
                description: refs.description,
                created_at: now,
                updated_at: now,
            };
            store::insert(conn, &attachment)?;
            Ok(attachment)
        })
        .await;
    match recorded {
        Ok(attachment) => Ok(Response::json(201, &view.render(&attachment))),
        Err(err) => {
            discard(&ctx, &blob_id).await;
            Err(err)
        }
    }
}

fn target_clone(t: &Target) -> Target {
    Target {
        workspace: t.workspace.clone(),
        document: t.document.clone(),
        item: t.item.clone(),
    }
}

async fn discard(ctx: &Ctx, blob_id: &str) {
    let id = blob_id.to_string();
    if let Err(err) = ctx.write(move |conn| Ok(blobs::delete(conn, &id)?)).await {
        log::warn!("could not remove an unused upload (swept at next start): {err}");
    }
}

/// `GET .../{id}`: the descriptor (older) or envelope (v2).
pub async fn get(ctx: Ctx, view: View) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let target = target(&ctx, view);
    let attachment = ctx
        .read(move |conn| load(conn, &user, view, &target))
        .await?;
    Ok(Response::json(200, &view.render(&attachment)))
}

/// `GET .../{id}/content`: the bytes, streamed; `ETag` is the SHA-256,
/// `If-None-Match` answers 304, a single `Range` answers 206.
pub async fn content(ctx: Ctx, view: View) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let target = target(&ctx, view);
    let a = ctx
        .read(move |conn| load(conn, &user, view, &target))
        .await?;
    let etag = format!("\"{}\"", a.sha256);
    let size = a.size.max(0) as u64;
    if let Some(wanted) = ctx.req.header("if-none-match") {
        if wanted.split(',').any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == etag
        }) {
            return Ok(Response::empty(304).header("etag", &etag));
        }
    }
    let (status, start, end) = match range::parse(ctx.req.header("range"), size) {
        ByteRange::Full => (200, 0, size),
        ByteRange::Partial { start, end } => (206, start, end),
        ByteRange::Unsatisfiable => {
            return Ok(Response::error(&ApiError::RangeNotSatisfiable { size }));
        }
    };
    let mut response = Response::stream(status, blobs::stream(&ctx.app.db, &a.blob_id, start, end))
        .header("content-type", &a.format)
        .header("content-length", &(end - start).to_string())
        .header("content-disposition", &content_disposition(&a.caption))
        .header("etag", &etag)
        .header("accept-ranges", "bytes");
    if status == 206 {
        response = response.header(
            "content-range",
            &format!("bytes {start}-{}/{size}", end - 1),
        );
    }
    Ok(response)
}

/// `DELETE .../{id}`: removes the file and its bytes; answers what it was.
pub async fn delete(ctx: Ctx, view: View) -> ApiResult<Response> {
    let user = ctx.user()?.clone();
    let target = target(&ctx, view);
    let attachment = ctx
        .write(move |conn| {
            let a = load(conn, &user, view, &target)?;
            store::delete(conn, &a)?;
            Ok(a)
        })
        .await?;
    Ok(Response::json(200, &view.render(&attachment)))
}
