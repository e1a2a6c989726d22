//! File bytes inside the SQLite file, streamed in both directions.
//!
//! A blob is a row of `blobs` and a run of 1 MiB rows of `blob_chunks`.
//! Uploading appends chunk after chunk through the writer (one short write
//! each, so a slow client never holds the writer), and the blob counts only
//! once its owner marks it complete in the same transaction that records the
//! attachment; until then it is [`Provisional`], deleted if the upload fails
//! or is dropped. Downloading reads each piece with SQLite's incremental blob I/O
//! on a pooled reader and hands it to the response through a small channel, so
//! memory stays flat whatever the file size.

use std::io;

use bytes::{Bytes, BytesMut};
use ring::digest::{Context, SHA256};
use rusqlite::MAIN_DB;
use tokio::sync::mpsc;

use super::{Db, Engine, OptionalExtension, params};
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

/// A blob that is not recorded yet: unless [`Provisional::keep`] is called
/// (its record committed), it is deleted, also when the upload is dropped
/// halfway (the client went away and the connection with it), so an aborted
/// upload's chunks are freed at once, not at the next start.
pub struct Provisional {
    db: Db,
    id: Option<String>,
}

impl Provisional {
    /// The blob is recorded: keep it.
    pub fn keep(mut self) {
        self.id = None;
    }

    /// Deletes the blob now and waits for it.
    pub async fn discard(mut self) {
        if let Some(id) = self.id.take() {
            remove(self.db.clone(), id).await;
        }
    }
}

impl Drop for Provisional {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        // Dropped without an answer (the request's future went away): the
        // delete runs on its own. Outside a runtime, the start-up sweep has it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(remove(self.db.clone(), id));
        }
    }
}

async fn remove(db: Db, id: String) {
    if let Err(err) = db.write(move |conn| Ok(delete(conn, &id)?)).await {
        log::warn!("could not remove an unfinished upload (swept at next start): {err}");
    }
}

/// Appends an upload's bytes to a new blob, chunk by chunk.
///
/// A chunk row is written when its 1 MiB is in, in one write. An upload that
/// pauses for [`BlobWriter::spill`] (its caller decides when: see
/// `attachments::routes`) has the part of the chunk it holds appended to the
/// chunk's row, and its buffer freed: a stalled upload holds no chunk in
/// memory, only what arrives between two spills.
pub struct BlobWriter {
    id: String,
    provisional: Provisional,
    next_seq: i64,
    /// Bytes of chunk `next_seq` not written yet.
    buffer: BytesMut,
    /// Bytes of chunk `next_seq` already in its row (spilled).
    stored: usize,
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
            provisional: Provisional {
                db: db.clone(),
                id: Some(id.clone()),
            },
            id,
            next_seq: 0,
            buffer: BytesMut::new(),
            stored: 0,
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
            let room = CHUNK_SIZE - self.stored - self.buffer.len();
            let take = room.min(data.len());
            self.buffer.extend_from_slice(&data.split_to(take));
            if self.stored + self.buffer.len() == CHUNK_SIZE {
                self.store().await?;
                self.next_seq += 1;
                self.stored = 0;
            }
        }
        Ok(())
    }

    /// Writes what the chunk holds in memory to its row (appending to what an
    /// earlier spill stored) and frees the buffer.
    pub async fn spill(&mut self) -> ApiResult<()> {
        let held = self.buffer.len();
        self.store().await?;
        self.stored += held;
        Ok(())
    }

    /// Writes the buffer to chunk `next_seq`'s row, a new row or appended to
    /// the one a spill began; the buffer's memory is released.
    async fn store(&mut self) -> ApiResult<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let piece = std::mem::take(&mut self.buffer).freeze();
        let (id, seq, append) = (self.id.clone(), self.next_seq, self.stored > 0);
        self.provisional
            .db
            .write(move |conn| {
                let sql = match (append, conn.dialect().engine) {
                    // `||` makes text of its operands on SQLite; the cast keeps
                    // the bytes a BLOB (lengths in bytes, the type `check` sums).
                    (true, Engine::Sqlite) => {
                        "UPDATE blob_chunks SET data = CAST(data || ?3 AS BLOB) \
                         WHERE blob_id = ?1 AND seq = ?2"
                    }
                    (true, Engine::Postgres) => {
                        "UPDATE blob_chunks SET data = data || ?3 WHERE blob_id = ?1 AND seq = ?2"
                    }
                    (false, _) => {
                        "INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?1, ?2, ?3)"
                    }
                };
                conn.prepare_cached(sql)?
                    .execute(params![id, seq, piece.as_ref()])?;
                Ok(())
            })
            .await
    }

    /// Stores what is still buffered; the blob is then whole but not yet
    /// complete, and deleted unless the caller keeps it ([`Provisional`]).
    pub async fn finish(mut self) -> ApiResult<(WrittenBlob, Provisional)> {
        self.store().await?;
        let sha256 = hex(self.digest.clone().finish().as_ref());
        let written = WrittenBlob {
            id: self.id.clone(),
            size: self.size,
            sha256,
        };
        Ok((written, self.provisional))
    }

    /// Throws the partial blob away (the upload failed).
    pub async fn abort(self) {
        self.provisional.discard().await;
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Marks a fully written blob complete, inside the caller's transaction.
pub fn mark_complete(conn: &super::Conn, blob: &WrittenBlob) -> super::Result<()> {
    conn.prepare_cached("UPDATE blobs SET size = ?2, sha256 = ?3, complete = 1 WHERE id = ?1")?
        .execute(params![blob.id, blob.size as i64, blob.sha256])?;
    Ok(())
}

pub fn delete(conn: &super::Conn, id: &str) -> super::Result<()> {
    conn.prepare_cached("DELETE FROM blobs WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Removes blobs of uploads that never completed (cut short, or a crash).
/// Only safe while no upload is in progress: at startup.
pub fn sweep_incomplete(conn: &super::Conn) -> super::Result<usize> {
    conn.execute("DELETE FROM blobs WHERE complete = 0", [])
}

/// How old an incomplete blob must be before a starting server removes it
/// from a store other processes serve ([`sweep_incomplete_before`]).
pub const INCOMPLETE_AFTER_MS: i64 = 3600 * 1000;

/// [`sweep_incomplete`] on a store other server processes may be writing
/// uploads to (PostgreSQL): only blobs begun before `cutoff_ms`, so that a
/// process starting does not remove another's upload in progress.
pub fn sweep_incomplete_before(conn: &super::Conn, cutoff_ms: i64) -> super::Result<usize> {
    conn.execute(
        "DELETE FROM blobs WHERE complete = 0 AND created_at < ?1",
        [cutoff_ms],
    )
}

/// Reads `len` bytes at `offset` of a blob, never more than one chunk row at
/// a time: with SQLite's incremental blob I/O, or PostgreSQL's `substring`
/// (only the piece crosses the wire).
pub fn read_at(conn: &super::Conn, blob_id: &str, offset: u64, len: usize) -> ApiResult<Vec<u8>> {
    let seq = (offset / CHUNK_SIZE as u64) as i64;
    let within = (offset % CHUNK_SIZE as u64) as usize;
    let gone = || ApiError::not_found("The file's content is no longer stored");
    let raw = match conn {
        super::Conn::Sqlite(raw) => raw,
        super::Conn::Pg(_) => {
            return conn
                .prepare_cached(
                    "SELECT substring(data FROM ?3 FOR ?4) FROM blob_chunks \
                     WHERE blob_id = ?1 AND seq = ?2",
                )?
                .query_row(
                    params![blob_id, seq, within as i64 + 1, len as i64],
                    |row| row.get(0),
                )
                .optional()?
                .ok_or_else(gone);
        }
    };
    let rowid: i64 = conn
        .prepare_cached("SELECT rowid FROM blob_chunks WHERE blob_id = ?1 AND seq = ?2")?
        .query_row(params![blob_id, seq], |row| row.get(0))
        .optional()?
        .ok_or_else(gone)?;
    let blob = raw.blob_open(MAIN_DB, c"blob_chunks", c"data", rowid, true)?;
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
