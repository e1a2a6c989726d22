//! The single writer: one thread owns the only read-write connection the server
//! uses, so no request ever meets "database is locked".
//!
//! Writes queue up while a commit is in progress; the writer takes everything
//! queued as one batch, runs each write as one unit (undone alone if it
//! fails) inside one transaction, and commits once (group commit). Each caller is answered only
//! once the batch is durable: on PostgreSQL when its COMMIT returns; on a data
//! file when the [`Syncer`] has flushed the WAL behind it, while the writer
//! already runs the next batch (`db::durable`): one flush per batch at most,
//! and none on the writer's path.

use std::cell::Cell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Conn;
use super::checkpoint::CaughtUp;
use super::durable::{Durable, Syncer};
use super::stamp::{Changed, CommitWatch};
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::{ApiError, ApiResult};

/// Most writes committed together; bounds the latency a batch adds.
const MAX_BATCH: usize = 256;

/// Writes waiting beyond this make submitters wait (backpressure, not memory growth).
const QUEUE_DEPTH: usize = 4096;

/// After a batch on SQLite had to run its writes again (`commit_batch`), how
/// many batches run with a savepoint per write.
const CAREFUL_BATCHES: u32 = 64;

/// On PostgreSQL, after a batch whose BEGIN, sent ahead, found another
/// process's writes (and so ran again), how many batches wait for their
/// BEGIN's answer before their first write: where several processes write
/// at once, every batch would otherwise run twice.
const SHARED_BATCHES: u32 = 64;

/// How many writes the next batch may take, on a data file, where a batch's
/// flush runs behind the writer (`db::durable`). A batch that takes every
/// write queued leaves the writer nothing to do while it is flushed when
/// the writes come from a bounded set of clients, each waiting for its answer
/// before its next write (a form, an integration's loop, a benchmark's
/// connections): they all wait for the same flush. A smaller batch lets its
/// flush run while the writer runs the next, at the price of a COMMIT more.
/// The limit finds the balance by itself, as TCP's window does:
/// - set to half the batch's size when the writer, after a batch, finds
///   nothing queued while a flush is pending (its callers wait for the disk,
///   not for the writer), unless the batch held a single write (nothing to
///   split: a lone client), or its writes took less time than the last
///   flush or than its COMMIT: the next batch's writes would then end long
///   before this batch's flush, so splitting hides little of the flush and
///   costs a COMMIT more (every commit writes the pages the batch touched,
///   and the syncer flushes once more). So the limit settles where a
///   batch's writes take about as long as a flush;
/// - raised by one when a batch was cut at the limit with writes still
///   queued (the writer is what they wait for), doubled when more than two
///   batches' worth are queued (a burst after a quiet spell).
///
/// On PostgreSQL, whose COMMIT waits for its own flush, nothing is pending
/// after a batch and the limit stays at [`MAX_BATCH`].
#[derive(Debug)]
struct BatchLimit {
    limit: usize,
}

/// Where a batch's time went, on the writer's thread.
#[derive(Clone, Copy, Debug, Default)]
struct BatchTimes {
    writes: Duration,
    commit: Duration,
    /// The last flush's (zero on PostgreSQL, or before the first).
    flush: Duration,
}

impl BatchLimit {
    fn new() -> BatchLimit {
        BatchLimit { limit: MAX_BATCH }
    }

    fn get(&self) -> usize {
        self.limit
    }

    /// After a batch that took `taken` writes: how many writes were queued
    /// once it was handed over, whether a flush was then pending, and the
    /// time its writes and its COMMIT took.
    fn adjust(&mut self, taken: usize, queued: usize, flushing: bool, times: BatchTimes) {
        if queued > 0 {
            if taken >= self.limit {
                let grown = if queued > 2 * self.limit {
                    self.limit * 2
                } else {
                    self.limit + 1
                };
                self.limit = grown.min(MAX_BATCH);
            }
        } else if flushing
            && taken > 1
            && times.writes >= times.commit
            && times.writes >= times.flush
        {
            self.limit = (taken.min(self.limit) / 2).max(1);
        }
    }
}

/// What the writer runs after every write, whatever the write is: the change
/// log (`changes::capture`). The store does not know what it records; the
/// server hands it in when it opens the store.
pub trait Capture: Send + Sync + 'static {
    /// Prepares the writer's connection, once.
    fn install(&self, conn: &Conn) -> super::Result<()>;
    /// Records what the write just run by `actor` changed, in the batch's
    /// transaction right after the write's savepoint was released (SQLite)
    /// or just before (PostgreSQL: `Dialect::records_before_release`); returns
    /// the last change sequence it appended, if any. An error fails the
    /// whole batch.
    fn record(&self, conn: &Conn, actor: &str) -> ApiResult<Option<u64>>;
    /// [`Capture::record`] as the writer calls it: what it records may be
    /// held back until [`Capture::append_held`], which the writer calls just
    /// before the batch's COMMIT (the change log on PostgreSQL: one INSERT
    /// for the batch). Returns what it appended at once, as `record` does.
    fn hold(&self, conn: &Conn, actor: &str) -> ApiResult<Option<u64>> {
        self.record(conn, actor)
    }
    /// [`Capture::hold`] without waiting for anything, when the write
    /// qualifies (true; false: it does not, and nothing was done): what
    /// it changed is confirmed later, by a later write's
    /// [`Capture::hold`] or by [`Capture::settle`]. `wrote`: whether the
    /// write ran a statement that may write ([`super::conn::take_written`]).
    /// Only for a batch run without a savepoint per write: a failed
    /// confirmation runs the batch again.
    fn defer(&self, _conn: &Conn, _actor: &str, _wrote: bool) -> ApiResult<bool> {
        Ok(false)
    }
    /// Whether writes [`Capture::defer`]red wait for confirmation.
    fn deferring(&self) -> bool {
        false
    }
    /// Confirms the writes [`Capture::defer`]red, before the batch's
    /// COMMIT. An error: the batch must run again with a savepoint per
    /// write.
    fn settle(&self, _conn: &Conn) -> ApiResult<()> {
        Ok(())
    }
    /// Appends what [`Capture::hold`] held back, in the batch's transaction;
    /// the last change sequence appended. An error fails the whole batch.
    fn append_held(&self, _conn: &Conn) -> ApiResult<Option<u64>> {
        Ok(None)
    }
    /// Drops what [`Capture::hold`] held back: its transaction was rolled
    /// back.
    fn drop_held(&self) {}
    /// Forgets what a write that failed had changed (it was rolled back).
    fn discard(&self);
    /// The last change sequence committed.
    fn head(&self, conn: &Conn) -> super::Result<u64>;
    /// Housekeeping of what the capture keeps on the connection, which the
    /// writer calls between two batches, outside any transaction. An error
    /// is logged; the next call tries again.
    fn tidy(&self, _conn: &Conn) -> super::Result<()> {
        Ok(())
    }
}

/// No change log (unit tests of the store itself).
pub struct NoCapture;

impl Capture for NoCapture {
    fn install(&self, _: &Conn) -> super::Result<()> {
        Ok(())
    }
    fn record(&self, _: &Conn, _: &str) -> ApiResult<Option<u64>> {
        Ok(None)
    }
    fn discard(&self) {}
    fn head(&self, _: &Conn) -> super::Result<u64> {
        Ok(0)
    }
}

/// One queued write: run as one unit of its batch, then answered after the
/// commit.
trait WriteJob: Send {
    /// Who the write acts for, as the change log records it.
    fn actor(&self) -> &str;
    /// Whether the write is bookkeeping only (see `Db::write_bookkeeping`).
    fn bookkeeping(&self) -> bool;
    /// Runs the write; true when what it did should be kept.
    fn run(&mut self, conn: &Conn) -> bool;

    /// Whether its last run failed.
    fn failed(&self) -> bool;

    /// Fails its last run with `error`: a statement it sent ahead
    /// (`Statement::execute_ahead`) failed, which the writer found only
    /// when it recorded the write's changes.
    fn fail(&mut self, error: ApiError);

    /// Answers the caller with the write's own result, unless the batch failed.
    fn deliver(self: Box<Self>, committed: ApiResult<()>);
}

struct PendingWrite<T, F> {
    actor: Arc<str>,
    bookkeeping: bool,
    work: Option<F>,
    result: Option<ApiResult<T>>,
    reply: oneshot::Sender<ApiResult<T>>,
}

impl<T, F> WriteJob for PendingWrite<T, F>
where
    F: FnMut(&Conn) -> ApiResult<T> + Send,
    T: Send,
{
    fn actor(&self) -> &str {
        &self.actor
    }

    fn bookkeeping(&self) -> bool {
        self.bookkeeping
    }

    fn run(&mut self, conn: &Conn) -> bool {
        let Some(work) = self.work.as_mut() else {
            return false;
        };
        let result = catch_unwind(AssertUnwindSafe(|| work(conn)))
            .unwrap_or_else(|_| Err(ApiError::internal("a write panicked")));
        let keep = result.is_ok();
        self.result = Some(result);
        keep
    }

    fn failed(&self) -> bool {
        matches!(self.result, Some(Err(_)))
    }

    fn fail(&mut self, error: ApiError) {
        self.result = Some(Err(error));
    }

    fn deliver(self: Box<Self>, committed: ApiResult<()>) {
        let answer = match (committed, self.result) {
            // A write that failed by itself reports its own error.
            (_, Some(Err(own))) => Err(own),
            (Err(batch), _) => Err(batch),
            (Ok(()), Some(Ok(value))) => Ok(value),
            (Ok(()), None) => Err(ApiError::internal("write was never run")),
        };
        let _ = self.reply.send(answer);
    }
}

type Job = Box<dyn WriteJob>;

thread_local! {
    /// The writer thread's latest transaction; 0 on every other thread.
    static TRANSACTION: Cell<u64> = const { Cell::new(0) };
}

/// The writer's current transaction, when called from inside a write (`None`
/// anywhere else). Facts established earlier in the same transaction still
/// hold: no other process can commit while the writer holds the write lock.
pub fn current_transaction() -> Option<u64> {
    let id = TRANSACTION.with(Cell::get);
    (id != 0).then_some(id)
}

/// Runs `test` on a thread of its own that counts as the writer's inside a
/// transaction (unit tests of what only the writer does: `db::kept`,
/// `db::offered`).
#[cfg(test)]
pub(crate) fn as_writer(test: impl FnOnce() + Send + 'static) {
    std::thread::spawn(|| {
        TRANSACTION.with(|t| t.set(1));
        test();
    })
    .join()
    .unwrap();
}

#[derive(Clone)]
pub struct Writer {
    queue: Arc<Mutex<Option<mpsc::Sender<Job>>>>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
    /// The last change sequence committed, sent after every commit that
    /// appended changes.
    head: watch::Receiver<u64>,
}

impl Writer {
    /// Starts the writer thread on `conn` (a data file's, set to
    /// `synchronous = NORMAL`), with `capture` installed on it; `watch` reads
    /// the file's commit position, for the bookkeeping commits it records;
    /// `syncer` flushes the file's WAL behind it, counting in `durable`.
    pub fn start(
        conn: Conn,
        capture: Arc<dyn Capture>,
        watch: Arc<CommitWatch>,
        durable: Arc<Durable>,
        syncer: Syncer,
        caught_up: Arc<CaughtUp>,
    ) -> super::Result<Writer> {
        Writer::spawn(
            conn,
            capture,
            None,
            Some(File {
                watch,
                durable,
                syncer,
                caught_up,
            }),
        )
    }

    /// [`Writer::start`], with the way to a new connection when the one it
    /// has is lost (PostgreSQL restarted or failed over): the writer makes a
    /// new one, with the capture installed, before its next batch. While it
    /// cannot, each batch is answered 503 and it tries again for the next.
    pub fn start_reconnecting(
        conn: Conn,
        capture: Arc<dyn Capture>,
        reconnect: Reconnect,
    ) -> super::Result<Writer> {
        Writer::spawn(conn, capture, Some(reconnect), None)
    }

    fn spawn(
        conn: Conn,
        capture: Arc<dyn Capture>,
        reconnect: Option<Reconnect>,
        file: Option<File>,
    ) -> super::Result<Writer> {
        capture.install(&conn)?;
        let (head_sender, head) = watch::channel(capture.head(&conn)?);
        let (sender, receiver) = mpsc::channel::<Job>(QUEUE_DEPTH);
        let thread = std::thread::Builder::new()
            .name("quayside-writer".into())
            .spawn(move || {
                let (watch, flushed, caught_up) = match file {
                    Some(File {
                        watch,
                        durable,
                        syncer,
                        caught_up,
                    }) => (Some(watch), Some((durable, syncer)), Some(caught_up)),
                    None => (None, None, None),
                };
                let writer = Thread {
                    conn,
                    capture,
                    head: Arc::new(head_sender),
                    reconnect,
                    counted: None,
                    watch,
                    flushed,
                    caught_up,
                };
                writer.run(receiver)
            })
            .expect("cannot start the writer thread");
        Ok(Writer {
            queue: Arc::new(Mutex::new(Some(sender))),
            thread: Arc::new(Mutex::new(Some(thread))),
            head,
        })
    }

    /// The last change sequence committed, updated after each commit.
    pub fn head(&self) -> watch::Receiver<u64> {
        self.head.clone()
    }

    /// Queues a write. The returned future owns everything it needs, so it is
    /// `Send + 'static` and can be awaited from any task.
    pub fn submit<T, F>(
        &self,
        actor: Arc<str>,
        bookkeeping: bool,
        work: F,
    ) -> impl Future<Output = ApiResult<T>> + Send + 'static
    where
        F: FnMut(&Conn) -> ApiResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let sender = self.queue.lock().unwrap_or_else(|p| p.into_inner()).clone();
        async move {
            let sender = sender.ok_or_else(shutting_down)?;
            let (reply, answer) = oneshot::channel::<ApiResult<T>>();
            let job: Job = Box::new(PendingWrite {
                actor,
                bookkeeping,
                work: Some(work),
                result: None,
                reply,
            });
            sender.send(job).await.map_err(|_| shutting_down())?;
            answer
                .await
                .map_err(|_| ApiError::internal("the writer dropped a write"))?
        }
    }

    /// Closes the queue and waits until every queued write has been committed.
    pub fn stop(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

/// Makes a new connection for the writer (the message: why it could not).
pub type Reconnect = Box<dyn Fn() -> Result<Conn, String> + Send>;

/// After a failed attempt to reconnect, the pause before the next batch.
const RECONNECT_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);

/// The writer thread's own state.
struct Thread {
    conn: Conn,
    capture: Arc<dyn Capture>,
    head: Arc<watch::Sender<u64>>,
    reconnect: Option<Reconnect>,
    /// What the next transaction's BEGIN answers if no other process (nor
    /// the CLI) writes in between (`Conn::begin_writing`).
    counted: Option<u64>,
    /// A data file's commit position, where bookkeeping commits are
    /// recorded (none on PostgreSQL).
    watch: Option<Arc<CommitWatch>>,
    /// A data file's batches numbered as they commit, and the thread that
    /// makes them durable (none on PostgreSQL, whose COMMIT is durable).
    flushed: Option<(Arc<Durable>, Syncer)>,
    /// A data file's background checkpoint, telling when it copied every
    /// frame of a long WAL (`checkpoint`).
    caught_up: Option<Arc<CaughtUp>>,
}

/// What the writer of a data file has that the writer of a PostgreSQL
/// database does not.
struct File {
    watch: Arc<CommitWatch>,
    durable: Arc<Durable>,
    syncer: Syncer,
    caught_up: Arc<CaughtUp>,
}

impl Thread {
    /// A usable connection for the next batch: the one it has, or, when that
    /// one is lost and the writer can reconnect, a new one with the capture
    /// installed. `Err`: the database cannot be reached now.
    fn connected(&mut self) -> Result<(), String> {
        let Some(reconnect) = self.reconnect.as_ref().filter(|_| self.conn.is_lost()) else {
            return Ok(());
        };
        let conn = reconnect()?;
        self.capture
            .install(&conn)
            .map_err(|e| format!("cannot prepare the change log's capture: {e}"))?;
        self.conn = conn;
        log::info!("writer: connected to the database again");
        Ok(())
    }

    /// Before a batch, on a data file: the count of other connections'
    /// commits seen (`PRAGMA data_version`) and then the commit position.
    /// Also starts over the note of the watched tables changed
    /// (`preupdate::take_changed`).
    fn record_start(&self) -> Option<(i64, Option<super::stamp::Stamp>)> {
        let watch = self.watch.as_ref()?;
        super::preupdate::take_changed();
        let seen = self.conn.data_version().ok()?;
        Some((seen, watch.stamp()))
    }

    /// After that batch, when no other connection committed meanwhile (the
    /// count of their commits did not move, read after the position), what
    /// its commits changed of what the caches hold, recorded between the
    /// positions before and after ([`CommitWatch::recorded`]):
    /// - nothing, when every write of it was bookkeeping, all were
    ///   committed, and nothing entered the change log;
    /// - data of the watched groups of tables its row hook saw change
    ///   (`stamp::Tables`; none, or some), since the hook sees every row the
    ///   connection changes, rolled back or not;
    /// - otherwise nothing is recorded, and the caches start over.
    fn record_end(
        &self,
        (seen, before): (i64, Option<super::stamp::Stamp>),
        appended: Option<u64>,
        answers: &[(Job, ApiResult<()>)],
    ) {
        let Some(watch) = &self.watch else { return };
        let (tables, documents) = super::preupdate::take_changed();
        let only_bookkeeping = !answers.is_empty()
            && answers
                .iter()
                .all(|(job, committed)| job.bookkeeping() && committed.is_ok());
        let changed = if appended.is_none() && only_bookkeeping {
            Changed::Nothing
        } else if matches!(&self.conn, Conn::Sqlite(conn) if super::preupdate::hooked(conn)) {
            Changed::Data {
                tables,
                documents: documents.map(Into::into),
            }
        } else {
            return;
        };
        let after = watch.stamp();
        if self.conn.data_version().ok() == Some(seen) {
            watch.recorded(before, after, changed);
        }
    }

    fn run(mut self, mut receiver: mpsc::Receiver<Job>) {
        let mut batch: Vec<Job> = Vec::with_capacity(MAX_BATCH);
        let mut limit = BatchLimit::new();
        // Batches still to run with a savepoint per write after one was
        // replayed (`commit_batch`).
        let mut careful = 0;
        // Batches still to begin by waiting for their BEGIN's answer after
        // one sent ahead found another process's writes (`commit_batch`).
        let mut shared = 0;
        let mut queued = None;
        while let Some(first) = queued.take().or_else(|| receiver.blocking_recv()) {
            batch.push(first);
            while batch.len() < limit.get() {
                match receiver.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            if let Err(why) = self.connected() {
                log::warn!("writer: the database cannot be reached ({why}); writes answer 503");
                for job in batch.drain(..) {
                    job.deliver(Err(crate::error::database_unreachable()));
                }
                std::thread::sleep(RECONNECT_PAUSE);
                continue;
            }
            let recording = self.record_start();
            let mut number = None;
            let began = Instant::now();
            let mut committing = began;
            let durable = self.flushed.as_ref().map(|(durable, _)| durable);
            // Every write the batch took, also those refused before they ran.
            let mut taken = batch.len();
            let Outcome {
                appended,
                answers,
                replayed,
                foreign,
            } = commit_batch(
                &self.conn,
                &*self.capture,
                &mut self.counted,
                &mut batch,
                limit.get(),
                careful > 0,
                shared == 0 && matches!(self.conn, Conn::Pg(_)),
                || {
                    let joining = receiver.try_recv().ok();
                    taken += usize::from(joining.is_some());
                    joining
                },
                || {
                    committing = Instant::now();
                    number = durable.map(|d| d.begin_commit());
                },
            );
            careful = if replayed {
                CAREFUL_BATCHES
            } else {
                careful.saturating_sub(1)
            };
            shared = if foreign {
                SHARED_BATCHES
            } else {
                shared.saturating_sub(1)
            };
            let times = BatchTimes {
                writes: committing - began,
                commit: committing.elapsed(),
                flush: durable.map(|d| d.last_flush()).unwrap_or_default(),
            };
            if let Some(before) = recording {
                self.record_end(before, appended, &answers);
            }
            let head = self.head.clone();
            let answer = move || {
                // The head moves before any caller hears of its commit: a
                // client that saw its write acknowledged finds it below the
                // head.
                if let Some(last) = appended {
                    head.send_if_modified(|head| {
                        let moved = last > *head;
                        *head = (*head).max(last);
                        moved
                    });
                }
                for (job, committed) in answers {
                    job.deliver(committed);
                }
            };
            match &self.flushed {
                // Answered once this batch is durable; one that committed
                // nothing, once the batches its writes could see are.
                Some((durable, syncer)) => {
                    let after = number.unwrap_or_else(|| durable.observed());
                    if number.is_none() && durable.is_durable(after) {
                        answer();
                    } else {
                        syncer.after_flush(after, Box::new(answer));
                        // The batch's frames go to the disk now, while the
                        // syncer may still be flushing an earlier batch.
                        if let Conn::Sqlite(conn) = &self.conn {
                            super::wal_writes::start_writeback(conn);
                        }
                    }
                }
                None => answer(),
            }
            if let Err(error) = self.capture.tidy(&self.conn) {
                log::warn!("writer: the change capture's housekeeping failed: {error}");
            }
            if self
                .caught_up
                .as_ref()
                .is_some_and(|caught_up| caught_up.take())
            {
                // The frames committed since the background checkpoint, so
                // that the next batch starts the WAL over.
                if let Err(error) =
                    self.conn
                        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                {
                    log::debug!("writer: checkpoint: {error}");
                }
            }
            queued = receiver.try_recv().ok();
            let waiting = receiver.len() + usize::from(queued.is_some());
            let flushing = self
                .flushed
                .as_ref()
                .is_some_and(|(durable, _)| !durable.is_durable(durable.observed()));
            limit.adjust(taken, waiting, flushing, times);
        }
        // Every batch committed is flushed and answered before `stop` returns.
        if let Some((_, mut syncer)) = self.flushed.take() {
            syncer.finish();
        }
    }
}

fn shutting_down() -> ApiError {
    ApiError::Unavailable("The server is shutting down; try again shortly".into())
}

/// Runs one batch: each job as one unit, its changes recorded by
/// `capture` right after it, one COMMIT for all. Writes that arrived while
/// the batch ran (`more`) join it before the COMMIT, up to `limit` ([`BatchLimit`]): they
/// would otherwise wait for this commit and then pay one of their own, and
/// every commit writes its dirty pages (the tails of the tables and indexes
/// it touched, the change log's included) once more. Returns the last change
/// sequence committed, if the batch appended any, and the answers of the jobs
/// still to be given: every job that ran (a job that failed by itself may have
/// read what an earlier batch committed, which its answer must not show
/// before that batch is durable); jobs refused before they ran are answered
/// here.
///
/// SQLite may roll back a whole transaction by itself on some errors (disk full,
/// I/O); the jobs already run in it are then answered with that error, and the
/// rest of the batch goes on in a fresh transaction.
///
/// `counted` is what the next BEGIN answers when nothing else wrote since this
/// writer's last transaction (PostgreSQL's count of writing transactions,
/// SQLite's count of other connections' commits); when it answers otherwise,
/// another process wrote in between, and what the capture and the writer
/// keep of rows (`db::kept`) may be stale: it is forgotten before the
/// batch's first write.
///
/// With `ahead` (PostgreSQL, unless another process's writes were found
/// lately), a batch that takes no savepoints sends its BEGIN ahead with its
/// first write (`Conn::begin_writing_ahead`) and compares what it answers
/// with `counted` once that answer is read, at the latest before the COMMIT:
/// until then every failure runs the batch again, and when it shows another
/// process's writes, the transaction is rolled back, everything kept is
/// forgotten, and every write of the batch runs again with the BEGIN waited
/// for ([`Outcome::foreign`]): a refusal too, which may have read a stale
/// kept row.
///
/// `committing` runs just before the COMMIT (a data file's batch takes its
/// number there, before readers can see it).
///
/// How one request's writes stay one unit:
/// - With a savepoint each (when `careful`): a write that fails is rolled
///   back to its savepoint, and the batch goes on.
/// - Without (otherwise): on SQLite a savepoint copies every page a write
///   first touches to its journal, about a tenth of a job's create in the
///   writer; on PostgreSQL its `SAVEPOINT` is a round trip of its own before
///   the write's first prepared statement. A write that fails without having
///   run a statement that may write, nor one that failed (on PostgreSQL the
///   transaction must then be rolled back; [`super::conn::take_written`]),
///   left nothing to undo. One that fails
///   after one is undone by rolling the whole transaction back; the writes
///   before it in the batch then run again, from the start, each in a
///   savepoint from then on, as does the rest of the batch
///   ([`Outcome::replayed`]; the writer runs its next [`CAREFUL_BATCHES`]
///   batches that way too: a client sending such writes
///   costs at most one replay of a batch in so many). A write run again
///   answers what its last run did; nothing of an earlier run is kept.
///   Without savepoints the capture may also defer a write's recording
///   ([`Capture::defer`]); while any write waits for that, every failure
///   (a write that failed after writing, a recording, the confirmation
///   before the COMMIT, [`Capture::settle`]) runs the batch again this way,
///   the failing write included: the failure may be a deferred write's.
#[allow(clippy::too_many_arguments)]
fn commit_batch(
    conn: &Conn,
    capture: &dyn Capture,
    counted: &mut Option<u64>,
    batch: &mut Vec<Job>,
    limit: usize,
    careful: bool,
    mut ahead: bool,
    mut more: impl FnMut() -> Option<Job>,
    committing: impl FnOnce(),
) -> Outcome {
    let mut replaying = !careful;
    let mut replayed = false;
    // The transaction's BEGIN was sent ahead and its answer is not read yet
    // (`Conn::begin_writing_ahead`): until it is, every failure runs the
    // batch again, as while a write is deferred.
    let mut unconfirmed = false;
    // Its answer, read, showed that another process wrote in between: what
    // the batch's writes read of kept rows may be stale, so it runs again.
    let mut foreign = false;
    let mut saw_foreign = false;
    let mut done: Vec<Job> = Vec::with_capacity(batch.len());
    // The answers to give once what they could see is durable: first the
    // jobs of a transaction SQLite abandoned, then the batch's own.
    let mut answers: Vec<(Job, ApiResult<()>)> = Vec::new();
    let mut in_transaction = false;
    let mut last_change: Option<u64> = None;
    // The first failure to record a write's changes: the batch is rolled back.
    let mut unrecorded: Option<ApiError> = None;
    let mut queue: std::collections::VecDeque<Job> = batch.drain(..).collect();
    // Writes taken into the batch (a write run again counts once).
    let mut taken = queue.len();
    loop {
        if foreign && in_transaction {
            // The BEGIN's answer, read after a write or before the COMMIT,
            // showed another process's writes: what the batch's writes read
            // of kept rows may be stale, and so may a refusal. Every write
            // runs again at once, as it would have run had the BEGIN been
            // waited for.
            log::debug!(
                "writer: another process wrote since this writer's last transaction; \
                 running the batch again"
            );
            roll_back_to_rerun(conn, capture, &mut done, &mut queue, &mut answers, false);
            in_transaction = false;
            last_change = None;
            unrecorded = None;
            ahead = false;
            saw_foreign = true;
            foreign = false;
        }
        let next = queue.pop_front().or_else(|| {
            let joining = if taken < limit { more() } else { None };
            taken += usize::from(joining.is_some());
            joining
        });
        let Some(mut job) = next else {
            // The writes deferred are confirmed before the COMMIT, and a BEGIN
            // sent ahead; when they cannot be, the batch runs again, as it
            // does when that BEGIN found another process's writes.
            if in_transaction
                && unrecorded.is_none()
                && (capture.deferring() || unconfirmed || foreign)
            {
                let settled = capture.settle(conn).and_then(|()| {
                    if unconfirmed {
                        let now = conn.confirm_begun()?;
                        foreign |= now.is_some() && now != *counted;
                        *counted = now;
                    }
                    Ok(())
                });
                let was_unconfirmed = std::mem::take(&mut unconfirmed);
                saw_foreign |= foreign;
                if settled.is_ok() && foreign {
                    // Run again at the loop's top.
                    continue;
                }
                if let Err(err) = settled {
                    conn.take_failed_ahead();
                    log::info!("writer: running a batch again ({})", err.chain());
                    let stand = !was_unconfirmed;
                    roll_back_to_rerun(conn, capture, &mut done, &mut queue, &mut answers, stand);
                    in_transaction = false;
                    last_change = None;
                    replaying = false;
                    replayed = true;
                    continue;
                }
            }
            break;
        };
        if !in_transaction {
            // Sent ahead once this writer has a count to compare it with.
            let begun = if ahead && replaying && counted.is_some() {
                conn.begin_writing_ahead()
            } else {
                conn.begin_writing().map(Some)
            };
            unconfirmed = matches!(begun, Ok(None));
            // Another process's writes found in a transaction rolled back
            // since were forgotten with it.
            saw_foreign |= std::mem::take(&mut foreign);
            match begun {
                Ok(None) => capture.drop_held(),
                Ok(Some(now)) => {
                    if now.is_some() && now != *counted {
                        forget(capture);
                    }
                    // If this transaction rolls back, the next BEGIN answers
                    // the same again.
                    *counted = now;
                    // Nothing held back outlives its transaction.
                    capture.drop_held();
                }
                Err(err) => {
                    log::error!("writer cannot begin a transaction: {err}");
                    job.deliver(Err(ApiError::from(err)));
                    continue;
                }
            }
            in_transaction = true;
            TRANSACTION.with(|t| t.set(t.get().wrapping_add(1).max(1)));
        }
        if !replaying {
            if let Err(err) = conn.execute_soon("SAVEPOINT request") {
                job.deliver(Err(ApiError::from(err)));
                continue;
            }
        }
        super::conn::take_written();
        conn.take_failed_ahead();
        // Writes before this one were deferred (`Capture::defer`): a
        // statement one of them sent ahead may fail in this one's place.
        let after_deferred = capture.deferring() || unconfirmed;
        let mut keep = job.run(conn);
        let wrote = super::conn::take_written();
        if !keep {
            forget(capture);
        }
        // A write whose changes cannot be recorded fails the whole batch
        // (below), so no change is ever committed without its entry. The
        // answers of the statements the write sent ahead are read with the
        // capture's first, or after it: one that failed fails the write, as
        // if it had returned the error itself.
        // Without a savepoint per write (`defer`), what the write changed
        // may be confirmed later (`Capture::defer`); any failure while
        // writes wait for that runs the batch again.
        let begun_unread = unconfirmed;
        let mut record = |job: &Job, defer: bool| {
            let deferred = capture.deferring() || begun_unread;
            let held = match defer.then(|| capture.defer(conn, job.actor(), wrote)) {
                Some(Ok(true)) => Ok(None),
                Some(Err(err)) => Err(err),
                _ => capture
                    .hold(conn, job.actor())
                    .and_then(|last| Ok(conn.settle_ahead().map(|()| last)?)),
            };
            match held {
                Ok(last) => {
                    last_change = last.or(last_change);
                    Recorded::Yes
                }
                Err(err) if deferred => {
                    conn.take_failed_ahead();
                    log::info!("writer: running a batch again ({})", err.chain());
                    Recorded::Again
                }
                Err(err) if conn.take_failed_ahead() => Recorded::WriteFailed(err),
                Err(err) => {
                    log::error!("cannot record a write's changes: {}", err.chain());
                    unrecorded.get_or_insert(err);
                    Recorded::No
                }
            }
        };
        let mut abandoned = conn.is_autocommit();
        if !abandoned && replaying {
            let mut again = false;
            if keep {
                match record(&job, true) {
                    Recorded::WriteFailed(err) => {
                        job.fail(err);
                        forget(capture);
                        keep = false;
                    }
                    Recorded::Again => again = true,
                    Recorded::Yes | Recorded::No => abandoned = conn.is_autocommit(),
                }
            }
            // It may have failed on a deferred write's statement: it runs
            // again too.
            again |= !keep && wrote && after_deferred;
            if again || (!keep && wrote) {
                // Undone with everything before it; those run again.
                if again {
                    queue.push_front(job);
                } else {
                    answers.push((job, Ok(())));
                }
                let stand = !(unconfirmed || foreign);
                roll_back_to_rerun(conn, capture, &mut done, &mut queue, &mut answers, stand);
                in_transaction = false;
                last_change = None;
                unrecorded = None;
                replaying = false;
                replayed = true;
                continue;
            }
        } else if !abandoned {
            let before_release = conn.dialect().records_before_release();
            if keep && before_release {
                let recorded = record(&job, false);
                if !matches!(recorded, Recorded::Yes) {
                    // Its savepoint is rolled back below, which keeps the
                    // transaction usable for the rest of the batch.
                    forget(capture);
                    keep = false;
                }
                if let Recorded::WriteFailed(err) = recorded {
                    job.fail(err);
                }
            }
            let closed = if keep {
                conn.execute_soon("RELEASE request")
            } else {
                // What the write sent ahead is undone unread.
                conn.forget_sent_ahead();
                conn.execute_batch("ROLLBACK TO request; RELEASE request")
            };
            if let Err(err) = &closed {
                log::error!("writer cannot close a savepoint: {err}");
            }
            if keep && closed.is_ok() && !before_release {
                // Recorded after the write's savepoint is released (SQLite),
                // in the batch's transaction: the log's pages are not copied
                // to a savepoint journal by every write.
                record(&job, false);
                abandoned = conn.is_autocommit();
            }
        }
        if abandoned {
            forget_transaction(capture);
            // SQLite abandoned the transaction, or the connection to
            // PostgreSQL was lost: nothing of this batch so far is stored.
            let lost = if conn.is_lost() {
                log::warn!(
                    "writer: the connection to the database was lost; failing {} writes",
                    done.len() + 1
                );
                crate::error::database_unreachable()
            } else {
                log::error!(
                    "writer transaction was rolled back by SQLite; failing {} writes",
                    done.len() + 1
                );
                ApiError::StorageFull
            };
            for earlier in done.drain(..) {
                answers.push((earlier, Err(clone_error(&lost))));
            }
            answers.push((job, Err(lost)));
            in_transaction = false;
            last_change = None;
            unrecorded = None;
            continue;
        }
        // What the write holds stays with the batch only if it stands.
        super::held::write_ended(keep && !job.failed());
        done.push(job);
        // The BEGIN's answer, once a statement waited for has read it: from
        // then on, a failure is the write's own again.
        if unconfirmed && in_transaction {
            if let Some(now) = conn.begun() {
                unconfirmed = false;
                foreign |= now.is_some() && now != *counted;
                *counted = now;
            }
        }
    }
    if !in_transaction {
        return Outcome {
            appended: None,
            answers,
            replayed,
            foreign: saw_foreign,
        };
    }
    // The counts the writes held (`held`), then the entries held back, in
    // the transaction before its COMMIT: failing to send either fails the
    // batch, as failing to record a write does.
    if unrecorded.is_none() {
        if let Err(err) = super::held::flush_batch(conn) {
            log::error!("cannot add a batch's held counts: {err}");
            unrecorded = Some(ApiError::from(err));
        }
    }
    if unrecorded.is_none() {
        match capture.append_held(conn) {
            Ok(last) => last_change = last.or(last_change),
            Err(err) => {
                log::error!("cannot append a batch's changes: {}", err.chain());
                unrecorded = Some(err);
            }
        }
    }
    if let Some(err) = unrecorded {
        let _ = conn.rollback();
        forget_transaction(capture);
        answers.extend(done.into_iter().map(|job| (job, Err(clone_error(&err)))));
        return Outcome {
            appended: None,
            answers,
            replayed,
            foreign: saw_foreign,
        };
    }
    committing();
    let committed = conn.commit(last_change.is_some()).map_err(|err| {
        let err = ApiError::from(err);
        log::error!("writer commit failed: {err}");
        let _ = conn.rollback();
        forget_transaction(capture);
        err
    });
    if committed.is_ok() && conn.counts_own_commits() {
        *counted = counted.map(|n| n + 1);
    }
    let appended = committed.is_ok().then_some(last_change).flatten();
    answers.extend(done.into_iter().map(|job| {
        let answer = match &committed {
            Ok(()) => Ok(()),
            Err(err) => Err(clone_error(err)),
        };
        (job, answer)
    }));
    Outcome {
        appended,
        answers,
        replayed,
        foreign: saw_foreign,
    }
}

/// What recording a write's changes came to (`commit_batch`).
enum Recorded {
    Yes,
    /// They could not be recorded: the batch fails.
    No,
    /// A statement the write sent ahead failed, with this error: the write
    /// fails, not the batch.
    WriteFailed(ApiError),
    /// Something failed while writes before it were deferred
    /// (`Capture::defer`): the batch runs again, this write included.
    Again,
}

/// Rolls the batch's transaction back so that its writes run again, each
/// with a savepoint: those in `done` that failed by themselves keep their
/// answer when `refusals_stand`, the others go back to the front of `queue`,
/// in order. A refusal does not stand while the batch's BEGIN, sent ahead,
/// is not confirmed (or found another process's writes): it may have read
/// a stale kept row.
fn roll_back_to_rerun(
    conn: &Conn,
    capture: &dyn Capture,
    done: &mut Vec<Job>,
    queue: &mut std::collections::VecDeque<Job>,
    answers: &mut Vec<(Job, ApiResult<()>)>,
    refusals_stand: bool,
) {
    if let Err(err) = conn.rollback() {
        log::error!("writer cannot roll back a batch to replay it: {err}");
    }
    forget_transaction(capture);
    for earlier in done.drain(..).rev() {
        if earlier.failed() && refusals_stand {
            answers.push((earlier, Ok(())));
        } else {
            queue.push_front(earlier);
        }
    }
}

/// What a batch did (`commit_batch`).
struct Outcome {
    /// The last change sequence committed, if the batch appended any.
    appended: Option<u64>,
    /// The answers to give once what they could see is durable.
    answers: Vec<(Job, ApiResult<()>)>,
    /// Whether its writes ran again (then with a savepoint each).
    replayed: bool,
    /// Whether a BEGIN sent ahead found that another process had written
    /// since the writer's last transaction (the batch then ran again).
    foreign: bool,
}

/// Forgets what the capture and the writer keep of rows (`db::kept`): a
/// write or a batch was rolled back, or another process wrote.
fn forget(capture: &dyn Capture) {
    capture.discard();
    super::kept::clear();
}

/// The batch's transaction was rolled back: [`forget`], and drop what the
/// capture held back for its COMMIT.
fn forget_transaction(capture: &dyn Capture) {
    forget(capture);
    capture.drop_held();
    super::held::clear();
}

/// Errors that reach several callers of one failed batch; only the variants
/// a commit can produce need to survive the copy.
fn clone_error(err: &ApiError) -> ApiError {
    match err {
        ApiError::StorageFull => ApiError::StorageFull,
        ApiError::Unavailable(message) => ApiError::Unavailable(message.clone()),
        other => ApiError::internal(other),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{BatchLimit, BatchTimes, MAX_BATCH};
    use crate::db::{Db, Tables};

    fn times(writes_us: u64, commit_us: u64) -> BatchTimes {
        BatchTimes {
            writes: Duration::from_micros(writes_us),
            commit: Duration::from_micros(commit_us),
            flush: Duration::ZERO,
        }
    }

    /// Sixteen clients, each waiting for its answer: the first batch takes
    /// all sixteen and the writer then waits for its flush with nothing to
    /// do, so the limit is set to half the batch; halved again while that
    /// repeats, never below one, and not once a batch's writes take less
    /// time than its COMMIT. A lone write (one client) changes nothing.
    #[test]
    fn the_batch_limit_halves_when_the_writer_waits_for_a_flush_with_nothing_queued() {
        let mut limit = BatchLimit::new();
        assert_eq!(limit.get(), MAX_BATCH);
        limit.adjust(1, 0, true, times(900, 500));
        assert_eq!(limit.get(), MAX_BATCH, "a lone write");
        limit.adjust(16, 0, true, times(3_000, 500));
        assert_eq!(limit.get(), 8);
        limit.adjust(8, 0, true, times(1_500, 500));
        assert_eq!(limit.get(), 4);
        // Writes cheaper than the COMMIT: no smaller batch.
        limit.adjust(4, 0, true, times(300, 500));
        assert_eq!(limit.get(), 4);
        limit.adjust(2, 0, true, times(900, 500));
        assert_eq!(limit.get(), 1);
        limit.adjust(1, 0, true, times(900, 500));
        assert_eq!(limit.get(), 1);
        // Nothing queued and nothing pending (PostgreSQL, or an idle
        // server): nothing learnt.
        limit.adjust(4, 0, false, times(900, 500));
        assert_eq!(limit.get(), 1);
    }

    /// Cheap writes (a PUT: 16 of them take less than one flush): splitting
    /// their batch would hide little of the flush and cost a COMMIT more, so
    /// the limit stays. Dearer ones are halved until a batch's writes take
    /// about as long as a flush, and no further.
    #[test]
    fn the_batch_limit_settles_where_a_batch_s_writes_take_about_as_long_as_a_flush() {
        let flushing = |writes_us: u64| BatchTimes {
            flush: Duration::from_micros(850),
            ..times(writes_us, 40)
        };
        let mut limit = BatchLimit::new();
        // Sixteen writes of 50 us: 800 us, under the flush's 850.
        limit.adjust(16, 0, true, flushing(800));
        assert_eq!(limit.get(), MAX_BATCH, "cheap writes keep one batch");
        // Sixteen writes of 200 us: 3.2 ms, then eight (1.6 ms), then
        // four (800 us, under a flush): 4 it stays.
        limit.adjust(16, 0, true, flushing(3_200));
        assert_eq!(limit.get(), 8);
        limit.adjust(8, 0, true, flushing(1_600));
        assert_eq!(limit.get(), 4);
        limit.adjust(4, 0, true, flushing(800));
        assert_eq!(limit.get(), 4);
    }

    /// A batch cut at the limit with writes still queued: the writer is
    /// what they wait for, and the limit grows by one, or doubles while more
    /// than two batches' worth wait, up to `MAX_BATCH`; a batch that ended
    /// below the limit with writes queued (they arrived after its COMMIT)
    /// changes nothing.
    #[test]
    fn the_batch_limit_grows_while_batches_are_cut_with_writes_queued() {
        let mut limit = BatchLimit::new();
        limit.adjust(16, 0, true, times(3_000, 500));
        assert_eq!(limit.get(), 8);
        limit.adjust(8, 8, true, times(1_500, 500));
        assert_eq!(limit.get(), 9);
        limit.adjust(3, 20, false, times(600, 500));
        assert_eq!(limit.get(), 9);
        // A burst: 1,000 writes queued behind a batch of nine.
        limit.adjust(9, 1_000, false, times(1_500, 500));
        assert_eq!(limit.get(), 18);
        let mut batches = 1;
        let mut queued: usize = 1_000 - 18;
        while limit.get() < MAX_BATCH && queued > 0 {
            let taken = limit.get().min(queued);
            queued -= taken;
            limit.adjust(taken, queued, false, times(1_500, 500));
            batches += 1;
        }
        assert!(batches <= 6, "{batches} batches to reach {}", limit.get());
        for _ in 0..1000 {
            let now = limit.get();
            limit.adjust(now, 1, false, times(1_500, 500));
        }
        assert_eq!(limit.get(), MAX_BATCH);
    }

    /// A capture that only sets a row hook on the writer's connection, as
    /// the change log's does: then every row the writer changes is seen.
    struct Hooked;

    use crate::db::Conn;

    impl super::Capture for Hooked {
        fn install(&self, conn: &Conn) -> crate::db::Result<()> {
            conn.on_row_change(|_| {})
        }
        fn record(&self, _: &Conn, _: &str) -> crate::error::ApiResult<Option<u64>> {
            Ok(None)
        }
        fn discard(&self) {}
        fn head(&self, _: &Conn) -> crate::db::Result<u64> {
            Ok(0)
        }
    }

    /// On a data file whose writer has a row hook, a commit of the writer's
    /// that changed no location keeps the same locations (what the read
    /// cache holds), though not the same data; one that changed a location,
    /// a rolled-back change of one included, and another connection's
    /// commit of anything, do not. Likewise for the workspaces and the
    /// organizations they name (what a workspace's scope is made of): a
    /// location leaves them, an organization does not, and leaves the
    /// locations. Without a row hook no commit keeps either group.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_a_commit_that_changed_none_of_a_group_of_tables_keeps_that_group() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (capture, hooked) in [
            (
                std::sync::Arc::new(Hooked) as std::sync::Arc<dyn super::Capture>,
                true,
            ),
            (std::sync::Arc::new(super::NoCapture), false),
        ] {
            let path = dir.path().join(format!("locations-{hooked}.db"));
            let db = Db::open(&path, 2, None, capture).expect("open");
            let start = db.stamp().await;
            db.write(|conn| {
                Ok(conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")?)
            })
            .await
            .expect("data");
            let data = db.stamp().await;
            assert!(!db.same_data(start, data), "a commit of data");
            assert_eq!(
                db.same(Tables::LOCATIONS, start, data),
                hooked,
                "no location changed"
            );
            db.write(|conn| {
                Ok(conn.execute(
                    "INSERT INTO locations (catalog, client_code, name, name_folded, \
                     status_code, created_at, creator, modified_at, modifier) \
                     VALUES ('ports', 'NLRTM', 'Rotterdam', 'rotterdam', 'ACTIVE', 1, 'c', 1, 'c')",
                    [],
                )?)
            })
            .await
            .expect("a location");
            let located = db.stamp().await;
            assert!(
                !db.same(Tables::LOCATIONS, data, located),
                "a location changed"
            );
            assert!(!db.same(Tables::LOCATIONS, start, located));
            assert_eq!(
                db.same(Tables::WORKSPACES, data, located),
                hooked,
                "no workspace changed"
            );
            db.write(|conn| {
                Ok(conn.execute(
                    "INSERT INTO organizations (id, name, name_folded, audience, created_at, \
                     updated_at) VALUES ('o1', 'Org', 'org', 'acme', 1, 1)",
                    [],
                )?)
            })
            .await
            .expect("an organization");
            let organized = db.stamp().await;
            assert!(
                !db.same(Tables::WORKSPACES, located, organized),
                "an organization changed"
            );
            assert_eq!(db.same(Tables::LOCATIONS, located, organized), hooked);
            let located = organized;
            // A write that changes a location and fails is rolled back; its
            // batch, which commits the other write, still counts as one
            // that changed a location (the hook saw it).
            let (release, hold) = crate::test_support::hold_writer(&db).await;
            let both = (
                crate::test_support::queued(db.write(|conn| {
                    conn.execute(
                        "UPDATE locations SET name = 'R' WHERE client_code = 'NLRTM'",
                        [],
                    )?;
                    Err::<(), _>(crate::error::ApiError::not_found("refused"))
                })),
                crate::test_support::queued(
                    db.write(|conn| Ok(conn.execute("INSERT INTO t VALUES (2)", [])?)),
                ),
            );
            drop(release);
            hold.await.expect("join").expect("hold");
            both.0.await.expect("join").expect_err("refused");
            both.1.await.expect("join").expect("data");
            let mixed = db.stamp().await;
            assert!(
                !db.same(Tables::LOCATIONS, located, mixed),
                "the hook saw a location"
            );
            db.write(|conn| Ok(conn.execute("INSERT INTO t VALUES (3)", [])?))
                .await
                .expect("data");
            let more = db.stamp().await;
            assert_eq!(db.same(Tables::LOCATIONS, mixed, more), hooked);
            // Another connection's commit: what it changed is not known.
            let other = crate::db::open_connection(&path).expect("another connection");
            other
                .execute("INSERT INTO t VALUES (4)", [])
                .expect("foreign");
            let foreign = db.stamp().await;
            assert!(
                !db.same(Tables::LOCATIONS, more, foreign),
                "another connection's commit"
            );
            db.write(|conn| Ok(conn.execute("INSERT INTO t VALUES (5)", [])?))
                .await
                .expect("data");
            assert!(!db.same(Tables::LOCATIONS, more, db.stamp().await));
            assert!(!db.same(Tables::LOCATIONS, None, db.stamp().await));
            drop(other);
            db.close().expect("close");
        }
    }

    /// A commit of bookkeeping only leaves the data the caches hold as it
    /// was: its position counts as the same data as the one before it. A
    /// commit of data, or a batch mixing the two, does not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bookkeeping_commit_keeps_the_same_data_and_a_data_commit_does_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = Db::open(
            &dir.path().join("bookkeeping.db"),
            2,
            None,
            std::sync::Arc::new(super::NoCapture),
        )
        .expect("open");
        db.write(|conn| {
            Ok(conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")?)
        })
        .await
        .expect("table");
        fn bookkeeping(
            db: &Db,
        ) -> impl std::future::Future<Output = crate::error::ApiResult<()>> + Send + 'static
        {
            db.write_bookkeeping(std::sync::Arc::from("statistics"), |conn| {
                Ok(conn.execute_batch("UPDATE t SET x = x + 1")?)
            })
        }
        let start = db.stamp().await;
        assert!(start.is_some());
        bookkeeping(&db).await.expect("bookkeeping");
        let kept = db.stamp().await;
        assert_ne!(kept, start, "the bookkeeping write was committed");
        assert!(db.same_data(start, kept), "bookkeeping keeps the data");
        bookkeeping(&db).await.expect("bookkeeping again");
        let twice = db.stamp().await;
        assert!(db.same_data(start, twice), "two in a row too");
        assert!(!db.same_data(twice, start), "never backwards");
        db.write(|conn| Ok(conn.execute_batch("INSERT INTO t VALUES (2)")?))
            .await
            .expect("data");
        let changed = db.stamp().await;
        assert!(
            !db.same_data(twice, changed),
            "a data commit changes the data"
        );
        assert!(!db.same_data(start, changed));
        // A bookkeeping write batched with a data write is a data commit,
        // whichever comes last. The writer held until both are queued: they
        // join its batch, the bookkeeping write last.
        let before = db.stamp().await;
        let (release, hold) = crate::test_support::hold_writer(&db).await;
        let both = (
            crate::test_support::queued(
                db.write(|conn| Ok(conn.execute_batch("INSERT INTO t VALUES (3)")?)),
            ),
            crate::test_support::queued(bookkeeping(&db)),
        );
        drop(release);
        hold.await.expect("join").expect("hold");
        both.0.await.expect("join").expect("data");
        both.1.await.expect("join").expect("bookkeeping");
        assert!(!db.same_data(before, db.stamp().await));
        // An unknown position is never the same.
        assert!(!db.same_data(None, db.stamp().await));
        db.close().expect("close");
    }
}
