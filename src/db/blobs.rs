//! File bytes inside the SQLite file, streamed in both directions.
//!
//! A blob is a row of `blobs` and a run of 1 MiB rows of `blob_chunks`.
//! Uploading appends chunk after chunk through the writer (one short write
//! each, so a slow client never holds the writer), and the blob counts only
//! once its owner marks it complete in the same transaction that records the
//! attachment. Downloading reads each piece with SQLite's incremental blob I/O
//! on a pooled reader and hands it to the response through a small channel, so
//! memory stays flat whatever the file size.

use std::io;

use bytes::{Bytes, BytesMut};
use ring::digest::{Context, SHA256};
use rusqlite::{Connection, MAIN_DB, OptionalExtension, params};
use tokio::sync::mpsc;

use super::Db;
use crate::clock;
use crate::error::{ApiError, ApiResult};

/// Bytes per stored chunk row.
pub const CHUNK_SIZE: usize = 1024 * 1024;
/// Bytes per piece sent to a downloading client.
const PIECE_SIZE: u64 = 128 * 1024;
/// Pieces read ahead of the client.
const READ_AHEAD: usize = 2;

/// A blob whose bytes are all stored, not yet marked complete.
#[derive(Clone, Debug)]
pub struct WrittenBlob {
    pub id: String,
    pub size: u64,
    pub sha256: String,
}

/// Appends an upload's bytes to a new blob, chunk by chunk.
pub struct BlobWriter {
    db: Db,
    id: String,
    next_seq: i64,
    buffer: BytesMut,
    size: u64,
    digest: Context,
}

impl BlobWriter {
    pub async fn create(db: &Db) -> ApiResult<BlobWriter> {
        let id = crate::ids::new_id();
        let row = id.clone();
        db.write(move |conn| {
            conn.prepare_cached("INSERT INTO blobs (id, created_at) VALUES (?1, ?2)")?
                .execute(params![row, clock::now_ms()])?;
            Ok(())
        })
        .await?;
        Ok(BlobWriter {
            db: db.clone(),
            id,
            next_seq: 0,
            buffer: BytesMut::with_capacity(CHUNK_SIZE),
            size: 0,
            digest: Context::new(&SHA256),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub async fn write(&mut self, mut data: Bytes) -> ApiResult<()> {
        self.digest.update(&data);
        self.size += data.len() as u64;
        while !data.is_empty() {
            let room = CHUNK_SIZE - self.buffer.len();
            let take = room.min(data.len());
            self.buffer.extend_from_slice(&data.split_to(take));
            if self.buffer.len() == CHUNK_SIZE {
                self.flush().await?;
            }
        }
        Ok(())
    }

    async fn flush(&mut self) -> ApiResult<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk =
            std::mem::replace(&mut self.buffer, BytesMut::with_capacity(CHUNK_SIZE)).freeze();
        let (id, seq) = (self.id.clone(), self.next_seq);
        self.db
            .write(move |conn| {
                conn.prepare_cached(
                    "INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, seq, chunk.as_ref()])?;
                Ok(())
            })
            .await?;
        self.next_seq += 1;
        Ok(())
    }

    /// Stores what is still buffered; the blob is then whole but not yet complete.
    pub async fn finish(mut self) -> ApiResult<WrittenBlob> {
        self.flush().await?;
        let sha256 = hex(self.digest.clone().finish().as_ref());
        Ok(WrittenBlob {
            id: self.id.clone(),
            size: self.size,
            sha256,
        })
    }

    /// Throws the partial blob away (the upload failed).
    pub async fn abort(self) {
        let id = self.id.clone();
        if let Err(err) = self.db.write(move |conn| Ok(delete(conn, &id)?)).await {
            log::warn!("could not remove an abandoned upload (swept at next start): {err}");
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Marks a fully written blob complete, inside the caller's transaction.
pub fn mark_complete(conn: &Connection, blob: &WrittenBlob) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE blobs SET size = ?2, sha256 = ?3, complete = 1 WHERE id = ?1")?
        .execute(params![blob.id, blob.size as i64, blob.sha256])?;
    Ok(())
}

pub fn delete(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM blobs WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Removes blobs of uploads that never completed (cut short, or a crash).
/// Only safe while no upload is in progress: at startup.
pub fn sweep_incomplete(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM blobs WHERE complete = 0", [])
}

/// Reads `len` bytes at `offset` of a blob with incremental blob I/O, never
/// more than one chunk row at a time.
pub fn read_at(conn: &Connection, blob_id: &str, offset: u64, len: usize) -> ApiResult<Vec<u8>> {
    let seq = (offset / CHUNK_SIZE as u64) as i64;
    let within = (offset % CHUNK_SIZE as u64) as usize;
    let rowid: i64 = conn
        .prepare_cached("SELECT rowid FROM blob_chunks WHERE blob_id = ?1 AND seq = ?2")?
        .query_row(params![blob_id, seq], |row| row.get(0))
        .optional()?
        .ok_or_else(|| ApiError::not_found("The file's content is no longer stored"))?;
    let blob = conn.blob_open(MAIN_DB, c"blob_chunks", c"data", rowid, true)?;
    let len = len.min(blob.len().saturating_sub(within));
    let mut buffer = vec![0u8; len];
    blob.read_at_exact(&mut buffer, within)?;
    Ok(buffer)
}

/// Streams bytes `start..end` of a blob: a task reads piece after piece on the
/// blocking pool while the response sends the previous ones.
pub fn stream(
    db: &Db,
    blob_id: &str,
    start: u64,
    end: u64,
) -> mpsc::Receiver<Result<Bytes, io::Error>> {
    let (sender, receiver) = mpsc::channel(READ_AHEAD);
    let db = db.clone();
    let blob_id = blob_id.to_string();
    tokio::spawn(async move {
        let mut offset = start;
        while offset < end {
            let to_chunk_end = CHUNK_SIZE as u64 - offset % CHUNK_SIZE as u64;
            let len = (end - offset).min(PIECE_SIZE).min(to_chunk_end) as usize;
            let id = blob_id.clone();
            let piece = db
                .read(move |conn, _| read_at(conn, &id, offset, len))
                .await;
            let message = match piece {
                Ok(bytes) if bytes.len() == len => Ok(Bytes::from(bytes)),
                Ok(_) => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stored file is shorter than recorded",
                )),
                Err(err) => Err(io::Error::other(err.to_string())),
            };
            let failed = message.is_err();
            if sender.send(message).await.is_err() || failed {
                return;
            }
            offset += len as u64;
        }
    });
    receiver
}
