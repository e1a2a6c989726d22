//! Files attached to documents. The older `files` of a job and the v2
//! `attachments` of any document are two views of the same records: a file
//! uploaded on one path is read, streamed and deleted on the other.

pub mod routes;
pub mod store;

use serde_json::{Value, json};

use crate::envelope::Entity;
use crate::error::{ApiError, ApiResult};
use crate::validate::Lines;

pub const ENTITY_TYPE: &str = "svc.hub.attachment";

#[derive(Clone, Debug)]
pub struct Attachment {
    pub id: String,
    pub workspace_id: String,
    pub document_id: String,
    pub blob_id: String,
    pub caption: String,
    pub format: String,
    pub size: i64,
    pub sha256: String,
    pub client_reference_number: Option<String>,
    pub vendor_reference_number: Option<String>,
    pub description: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Attachment {
    /// The older file descriptor: `{id, caption, location, body: {format, size, sha256}}`.
    pub fn descriptor(&self) -> Value {
        json!({
            "id": self.id,
            "caption": self.caption,
            "location": self.blob_id,
            "body": {"format": self.format, "size": self.size, "sha256": self.sha256},
        })
    }
}

impl Entity for Attachment {
    const ENTITY_TYPE: &'static str = ENTITY_TYPE;

    fn id(&self) -> &str {
        &self.id
    }

    /// The v2 attachment body.
    fn body(&self) -> Value {
        json!({
            "workspace": self.workspace_id,
            "document": self.document_id,
            "caption": self.caption,
            "size": self.size,
            "location": self.blob_id,
            "format": self.format,
            "sha256": self.sha256,
            "clientReferenceNumber": self.client_reference_number,
            "vendorReferenceNumber": self.vendor_reference_number,
            "description": self.description,
        })
    }

    fn stamps(&self) -> (i64, i64) {
        (self.created_at, self.updated_at)
    }
}

/// Longest file name (`caption`), in bytes of UTF-8: what file systems take.
pub const FILE_NAME_MAX_BYTES: usize = 255;

/// A file name from an upload's part: at most [`FILE_NAME_MAX_BYTES`], one
/// line. The error names the part, `file`.
pub fn check_file_name(name: &str) -> ApiResult<()> {
    if name.len() > FILE_NAME_MAX_BYTES {
        return Err(ApiError::invalid(
            "file",
            format!(
                "The file name is {} bytes long; at most {FILE_NAME_MAX_BYTES} bytes (UTF-8) are accepted",
                name.len()
            ),
        ));
    }
    crate::validate::check_text(name, "file", Lines::One).map_err(|_| {
        ApiError::invalid(
            "file",
            "The file name must not contain control characters (line breaks, tabs, NUL, ...)",
        )
    })
}

/// The media type of an upload: the part's own, else guessed from the file
/// name, else `application/octet-stream`.
pub fn media_type(declared: Option<&str>, file_name: &str) -> String {
    if let Some(declared) = declared.filter(|d| !d.is_empty() && *d != "application/octet-stream") {
        return declared.to_string();
    }
    let extension = file_name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("tif" | "tiff") => "image/tiff",
        Some("txt" | "log") => "text/plain",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        Some("xml") => "application/xml",
        Some("html" | "htm") => "text/html",
        Some("zip") => "application/zip",
        Some("doc") => "application/msword",
        Some("docx") => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        Some("xls") => "application/vnd.ms-excel",
        Some("xlsx") => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        _ => declared.unwrap_or("application/octet-stream"),
    }
    .to_string()
}

/// The `Content-Security-Policy` of every download: opened in a browser, it
/// is a sandboxed page with no origin that may load and run nothing.
pub const CONTENT_SECURITY_POLICY: &str = "sandbox; default-src 'none'";

/// Whether a browser would run or render a media type as an active page or
/// script: HTML and XHTML, SVG and every other XML (XSLT runs in it),
/// JavaScript in its many names, CSS, WebAssembly, and the few others that
/// browsers treat as documents. Parameters (`; charset=...`) are ignored.
pub fn is_active(media_type: &str) -> bool {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return true; // not a media type at all: never trust it
    };
    subtype.contains("html")
        || subtype == "xml"
        || subtype.ends_with("+xml")
        || subtype.contains("xsl")
        || subtype.contains("script") // javascript, ecmascript, jscript, livescript, ...
        || matches!(
            (kind, subtype),
            ("text", "css")
                | ("text", "vtt")
                | ("text", "cache-manifest")
                | ("application", "wasm")
                | ("application", "x-shockwave-flash")
                | ("application", "pdf+xml")
                | ("multipart", "x-mixed-replace")
        )
}

/// The `Content-Type` a download is served with: its `format`, except that
/// active types are `application/octet-stream` unless `serve_active` (the
/// `--serve-active-content` option).
pub fn served_type(format: &str, serve_active: bool) -> &str {
    if serve_active || !is_active(format) {
        format
    } else {
        "application/octet-stream"
    }
}

/// `Content-Disposition` for a download: an ASCII fallback name plus the exact
/// UTF-8 name (RFC 6266 / RFC 5987).
pub fn content_disposition(file_name: &str) -> String {
    let fallback: String = file_name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = file_name
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_media_types_from_names() {
        assert_eq!(media_type(None, "report.PDF"), "application/pdf");
        assert_eq!(media_type(Some("text/csv"), "x.bin"), "text/csv");
        assert_eq!(
            media_type(Some("application/octet-stream"), "a.png"),
            "image/png"
        );
        assert_eq!(media_type(None, "noext"), "application/octet-stream");
    }

    #[test]
    fn active_types_are_served_as_bytes_unless_allowed() {
        for active in [
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "application/xhtml+xml",
            "image/svg+xml",
            "text/javascript",
            "application/javascript",
            "application/x-javascript",
            "application/ecmascript",
            "text/xml",
            "application/xml",
            "application/rss+xml",
            "text/xsl",
            "text/css",
            "application/wasm",
            "multipart/x-mixed-replace",
            "garbage",
        ] {
            assert!(is_active(active), "{active}");
            assert_eq!(served_type(active, false), "application/octet-stream");
            assert_eq!(served_type(active, true), active);
        }
        for passive in [
            "application/pdf",
            "image/png",
            "text/plain",
            "text/csv",
            "application/json",
            "application/zip",
        ] {
            assert!(!is_active(passive), "{passive}");
            assert_eq!(served_type(passive, false), passive);
        }
    }

    #[test]
    fn disposition_escapes_names() {
        assert_eq!(
            content_disposition("Łódź \"q\".pdf"),
            "attachment; filename=\"__d_ _q_.pdf\"; filename*=UTF-8''%C5%81%C3%B3d%C5%BA%20%22q%22.pdf"
        );
    }
}
