//! Handlers of a job's `files` (older paths) and any document's
//! `attachments` (`/v2`): one implementation, two views.

use crate::db::Conn;

use serde_json::{Value, json};

use super::{
    Attachment, CONTENT_SECURITY_POLICY, ENTITY_TYPE, check_file_name, content_disposition,
    media_type, served_type, store,
};
use crate::app::{Ctx, Endpoint, UploadSlot, session};
use crate::clock;
use crate::db::blobs;
use crate::documents::kinds::JOB;
use crate::documents::{self, Document};
use crate::envelope::Entity;
use crate::error::{ApiError, ApiResult};
use crate::http::Method::{self, Delete, Get, Head, Post};
use crate::http::Response;
use crate::http::multipart::Part;
use crate::http::range::{self, ByteRange};
use crate::listing::{self, ColumnFields, FieldType, Generation};
use crate::openapi::op::Op;
use crate::openapi::op::tags::FILES;
use crate::openapi::schema::{
    envelope, filters, list_parameters, parameter, query, schema_ref, string,
};
use crate::validate::Lines;
use crate::workspaces::scope::Scope;

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

/// The routes of both views: list, upload, read, download, delete.
pub fn routes() -> Vec<Endpoint> {
    let references: Vec<Value> = [
        "clientReferenceNumber",
        "vendorReferenceNumber",
        "description",
    ]
    .iter()
    .map(|name| {
        query(
            name,
            "Stored with the attachment",
            json!({"type": "string", "maxLength": REFERENCE_MAX}),
        )
    })
    .collect();
    let mut routes = Vec::new();
    for view in [View::JobFiles, View::Attachments] {
        let generation = view.generation();
        let (read, upload_parameters) = match view {
            View::JobFiles => (schema_ref("FileDescriptor"), Vec::new()),
            View::Attachments => (
                envelope(Generation::V2, "Attachment", ENTITY_TYPE),
                references.clone(),
            ),
        };
        let [collection, item, content_path] = view.patterns();
        routes.extend([
            session(
                Get,
                collection,
                Op::new(FILES, "List the files of a document")
                    .parameters(list_parameters(generation, filters(&FIELDS)))
                    .list("The files", read.clone()),
                move |ctx| list(ctx, view),
            ),
            session(
                Post,
                collection,
                Op::new(FILES, "Upload a file (streamed; all or nothing)")
                    .parameters(upload_parameters)
                    .upload_body()
                    .ok(201, "Stored", read.clone()),
                move |ctx| upload(ctx, view),
            ),
            session(
                Get,
                item,
                Op::new(FILES, "Read a file's record").ok(200, "The record", read.clone()),
                move |ctx| get(ctx, view),
            ),
            session(
                Get,
                content_path,
                download_op(Op::new(FILES, "Download a file's bytes")),
                move |ctx| content(ctx, view),
            ),
            session(
                Head,
                content_path,
                download_op(Op::new(
                    FILES,
                    "A download's headers (size, type, ETag), without its bytes",
                )),
                move |ctx| content(ctx, view),
            ),
            session(
                Delete,
                item,
                Op::new(FILES, "Delete a file and its bytes").ok(200, "The deleted record", read),
                move |ctx| delete(ctx, view),
            ),
        ]);
    }
    routes
}

/// A download: conditional and single-range requests.
fn download_op(op: Op) -> Op {
    const WHOLE: &[&str] = &[
        "Content-Length",
        "Content-Disposition",
        "ETag",
        "Accept-Ranges",
        "Cache-Control",
        "X-Content-Type-Options",
        "Content-Security-Policy",
    ];
    const PART: &[&str] = &[
        "Content-Length",
        "Content-Disposition",
        "ETag",
        "Accept-Ranges",
        "Cache-Control",
        "X-Content-Type-Options",
        "Content-Security-Policy",
        "Content-Range",
    ];
    let bytes = json!({"*/*": {"schema": {"type": "string", "format": "binary"}}});
    op.parameters([
        parameter(
            "header",
            "If-None-Match",
            "The ETag of a copy held: 304 when it still matches",
            string(),
        ),
        parameter(
            "header",
            "Range",
            "One byte range (`bytes=a-b`, `bytes=a-`, `bytes=-n`); several are answered whole",
            string(),
        ),
    ])
    .answer(
        200,
        "The whole file, in its media type (`format`); active types (HTML, SVG, scripts, \
         XML) as `application/octet-stream` unless the server allows them",
        bytes.clone(),
        WHOLE,
    )
    .answer(206, "The requested range", bytes, PART)
    .answer(
        304,
        "Not modified: the ETag matches",
        json!({}),
        &["ETag", "Cache-Control"],
    )
    .error(
        416,
        Some("The range is outside the file, or a position is too large to be one"),
    )
}

/// Longest upload reference (`clientReferenceNumber` and the like), in characters.
const REFERENCE_MAX: usize = 4000;

impl View {
    /// The collection, one file, and its content.
    fn patterns(self) -> [&'static str; 3] {
        match self {
            View::JobFiles => [
                "/workspaces/{workspace_id}/jobs/{job_id}/files",
                "/workspaces/{workspace_id}/jobs/{job_id}/files/{file_id}",
                "/workspaces/{workspace_id}/jobs/{job_id}/files/{file_id}/content",
            ],
            View::Attachments => [
                "/v2/workspaces/{workspace_id}/documents/{document_id}/attachments",
                "/v2/workspaces/{workspace_id}/documents/{document_id}/attachments/{attachment_id}",
                "/v2/workspaces/{workspace_id}/documents/{document_id}/attachments/{attachment_id}/content",
            ],
        }
    }

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
            View::Attachments => a.v2(),
        }
    }
}

/// The ids a request names below its workspace: the document, the file.
#[derive(Clone)]
struct Target {
    document: String,
    item: String,
}

fn target(ctx: &Ctx, view: View) -> Target {
    Target {
        document: ctx.req.param(view.document_param()).to_string(),
        item: ctx.req.param(view.item_param()).to_string(),
    }
}

/// The document the files hang on, in the caller's workspace.
fn locate(conn: &Conn, scope: &Scope, view: View, target: &Target) -> ApiResult<Document> {
    let doc = match view {
        View::JobFiles => documents::store::get(conn, scope.id(), &JOB, None, &target.document)?,
        View::Attachments => documents::store::get_any(conn, scope.id(), &target.document)?,
    };
    doc.ok_or_else(|| {
        ApiError::not_found(format!(
            "No document with id \"{}\" in this workspace",
            target.document
        ))
    })
}

fn load(conn: &Conn, scope: &Scope, view: View, target: &Target) -> ApiResult<Attachment> {
    let doc = locate(conn, scope, view, target)?;
    store::get(conn, &doc.id, &target.item)?.ok_or_else(|| {
        ApiError::not_found(format!(
            "No file with id \"{}\" on this document",
            target.item
        ))
    })
}

/// `GET`: the document's files.
pub async fn list(ctx: Ctx, view: View) -> ApiResult<Response> {
    let query = listing::parse(ctx.req.query_pairs(), view.generation(), &FIELDS, &[])?;
    let target = target(&ctx, view);
    let carry = query.carry.clone();
    let page = ctx
        .read_in(move |conn, scope| {
            let doc = locate(conn, scope, view, &target)?;
            Ok(store::list(conn, &doc.id, &query)?)
        })
        .await?;
    Ok(page
        .map(|a| view.render(&a))
        .respond(ctx.req.path(), &carry))
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
        if slot.is_some() {
            return Err(ApiError::invalid_query(
                name,
                format!("`{name}` is given more than once"),
            ));
        }
        crate::validate::check_length(value, name, REFERENCE_MAX)
            .and_then(|()| crate::validate::check_text(value, name, Lines::One))
            .map_err(|err| ApiError::invalid_query(name, err.message()))?;
        *slot = Some(value.clone());
    }
    Ok(refs)
}

/// How long an upload may pause before what it holds of its current chunk is
/// written to the chunk's row and its memory freed (see [`blobs::BlobWriter`]):
/// a stalled upload then holds no chunk in memory. An upload that keeps
/// pausing costs at most one append of up to a chunk per pause.
const SPILL_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Streams one `file` part into a new blob, not recorded yet. When the part
/// fails (the client went away), the upload's slot is given back before its
/// chunks are removed: once they are gone, the slot is free.
async fn store_part(
    ctx: &Ctx,
    part: &mut Part,
    slot: &mut Option<UploadSlot>,
) -> ApiResult<(blobs::WrittenBlob, blobs::Provisional)> {
    let mut writer = ctx.blob_writer().await?;
    match stream_into(part, &mut writer).await {
        Ok(()) => writer.finish().await,
        Err(err) => {
            drop(slot.take());
            writer.abort().await;
            Err(err)
        }
    }
}

async fn stream_into(part: &mut Part, writer: &mut blobs::BlobWriter) -> ApiResult<()> {
    loop {
        // A part's next piece is taken up again after a pause: the wait
        // keeps no state of its own (multer's field holds it).
        let next = match tokio::time::timeout(SPILL_AFTER, part.chunk()).await {
            Ok(next) => next?,
            Err(_paused) => {
                writer.spill().await?;
                part.chunk().await?
            }
        };
        match next {
            Some(bytes) => writer.write(bytes).await?,
            None => return Ok(()),
        }
    }
}

/// `POST`: `multipart/form-data` with one part named `file`. The bytes stream
/// into the store as they arrive; the file is recorded only once all are in.
pub async fn upload(mut ctx: Ctx, view: View) -> ApiResult<Response> {
    let target = target(&ctx, view);
    let refs = references(&ctx, view)?;
    // Held until the answer or the upload's failure: beyond the limit, 503
    // before any byte is read.
    let mut slot = Some(ctx.upload_slot()?);
    // Fail fast, before reading any bytes, when the document is not there.
    {
        let target = target.clone();
        ctx.read_in(move |conn, scope| locate(conn, scope, view, &target).map(|_| ()))
            .await?;
    }
    let limit = ctx.app.settings.max_upload_bytes;
    let mut multipart = ctx.req.multipart(limit).await?;
    let mut stored: Option<(blobs::WrittenBlob, blobs::Provisional, String, String)> = None;
    while let Some(mut part) = multipart.next_part().await? {
        let name = part.name().unwrap_or("").to_string();
        if name != "file" || stored.is_some() {
            if let Some((_, provisional, _, _)) = stored.take() {
                drop(slot.take());
                provisional.discard().await;
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
        check_file_name(&caption)?;
        let format = media_type(part.content_type().as_deref(), &caption);
        let (blob, provisional) = store_part(&ctx, &mut part, &mut slot).await?;
        stored = Some((blob, provisional, caption, format));
    }
    let Some((blob, provisional, caption, format)) = stored else {
        return Err(crate::validate::missing("file"));
    };
    let recorded = ctx
        .write_in(move |conn, scope| {
            // Checked again: the workspace or document may have gone meanwhile.
            let doc = locate(conn, scope, view, &target)?;
            blobs::mark_complete(conn, &blob)?;
            let now = clock::now_ms();
            let attachment = Attachment {
                id: crate::ids::new_id(),
                workspace_id: doc.workspace_id.clone(),
                document_id: doc.id.clone(),
                blob_id: blob.id.clone(),
                caption: caption.clone(),
                format: format.clone(),
                size: blob.size as i64,
                sha256: blob.sha256.clone(),
                client_reference_number: refs.client.clone(),
                vendor_reference_number: refs.vendor.clone(),
                description: refs.description.clone(),
                created_at: now,
                updated_at: now,
            };
            store::insert(conn, &attachment)?;
            Ok(attachment)
        })
        .await;
    match recorded {
        Ok(attachment) => {
            provisional.keep();
            Ok(Response::json(201, &view.render(&attachment)))
        }
        Err(err) => {
            drop(slot);
            provisional.discard().await;
            Err(err)
        }
    }
}

/// `GET .../{id}`: the descriptor (older) or envelope (v2).
pub async fn get(ctx: Ctx, view: View) -> ApiResult<Response> {
    let target = target(&ctx, view);
    let attachment = ctx
        .read_in(move |conn, scope| load(conn, scope, view, &target))
        .await?;
    Ok(Response::json(200, &view.render(&attachment)))
}

/// `GET .../{id}/content`: the bytes, streamed; `ETag` is the SHA-256,
/// `If-None-Match` answers 304, a single `Range` answers 206. `HEAD`: the same
/// headers, no bytes. Every answer, errors too, is kept from running in a
/// browser: `nosniff` and a sandboxing CSP (see [`protect`]).
pub async fn content(ctx: Ctx, view: View) -> ApiResult<Response> {
    let answer = download(ctx, view).await;
    Ok(protect(answer.unwrap_or_else(|err| Response::error(&err))))
}

/// A download's answer may not be sniffed into another type, nor run as a
/// page of this origin if a browser opens it. The bytes (and a 304) may be
/// kept by the browser, not by shared caches, and are checked against their
/// ETag before reuse; an error is kept by no one, as every API answer.
fn protect(response: Response) -> Response {
    let status = response.status();
    let response = response
        .header("x-content-type-options", "nosniff")
        .header("content-security-policy", CONTENT_SECURITY_POLICY);
    if status < 300 || status == 304 {
        response.header("cache-control", "private, no-cache")
    } else {
        response
    }
}

async fn download(ctx: Ctx, view: View) -> ApiResult<Response> {
    let target = target(&ctx, view);
    let a = ctx
        .read_in(move |conn, scope| load(conn, scope, view, &target))
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
            return Err(ApiError::RangeNotSatisfiable { size });
        }
    };
    let body = if ctx.req.method() == Method::Head {
        Response::empty(status)
    } else {
        Response::stream(status, ctx.blob_stream(&a.blob_id, start, end))
    };
    let mut response = body
        .header(
            "content-type",
            served_type(&a.format, ctx.app.settings.serve_active_content),
        )
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
    let target = target(&ctx, view);
    let attachment = ctx
        .write_in(move |conn, scope| {
            let a = load(conn, scope, view, &target)?;
            store::delete(conn, &a)?;
            Ok(a)
        })
        .await?;
    Ok(Response::json(200, &view.render(&attachment)))
}
