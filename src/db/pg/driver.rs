//! The blocking connection under [`super::Client`]: tokio-postgres's client
//! and its connection on a small runtime of their own, driven by whichever
//! call waits, as the `postgres` crate drives them, plus what that crate
//! cannot do: statements sent without waiting for their answers
//! ([`Driver::send`]). Such a statement is written out at once, so that the
//! server runs it while the writer prepares the next, and its answer is
//! read in order before that of the next statement waited for: a statement
//! whose result the writer does not need costs it no round trip of its own
//! (docs/design/performance.md, "PostgreSQL: statements sent ahead").
//!
//! Answers come back in the order the statements were sent, so when a call
//! has its answer, every statement sent before it has its own: [`Driver::wait`]
//! reads them all, and the first that failed is that call's error (after a
//! failed statement, PostgreSQL refuses every later one of the transaction,
//! so the later error says nothing of its own).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{AsyncMessage, Error, Notification, Socket};

/// What the driver needs of tokio-postgres's `Connection`, whatever its
/// stream types (with or without TLS).
trait Messages: Send {
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<AsyncMessage, Error>>>;
}

impl<S, T> Messages for tokio_postgres::Connection<S, T>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
    T: AsyncRead + AsyncWrite + Unpin + Send,
{
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<AsyncMessage, Error>>> {
        tokio_postgres::Connection::poll_message(self, cx)
    }
}

/// A statement sent and not yet answered: its count of rows, to come.
type Answer = Pin<Box<dyn Future<Output = Result<u64, Error>> + Send>>;

struct Unanswered {
    answer: Answer,
    /// Its result, once read.
    done: Option<Result<u64, Error>>,
}

impl Unanswered {
    fn poll(&mut self, cx: &mut Context<'_>) -> bool {
        if self.done.is_none() {
            if let Poll::Ready(result) = self.answer.as_mut().poll(cx) {
                self.done = Some(result);
            }
        }
        self.done.is_some()
    }
}

pub(super) struct Driver {
    /// Drives the connection's socket while a call waits.
    runtime: tokio::runtime::Runtime,
    wire: Wire,
    /// Dropped first by [`Driver`]'s `Drop`, which then drives the
    /// connection to its end.
    client: std::mem::ManuallyDrop<Arc<tokio_postgres::Client>>,
    /// Statements [`Driver::send`] sent, in order, whose answers no call has
    /// read yet.
    unanswered: VecDeque<Unanswered>,
    /// Whether a call returned the failure of a statement sent ahead since
    /// [`Driver::take_failed_ahead`] last answered.
    failed_ahead: bool,
}

/// The connection and what it brought that no request asked for.
struct Wire {
    connection: Box<dyn Messages>,
    /// Whether the connection has ended.
    ended: bool,
    notifications: VecDeque<Notification>,
}

impl Wire {
    /// Drives the connection as far as it goes now: reads what arrived
    /// (handing each answer to its request), writes what is queued.
    /// Notifications are kept, notices logged. A failure ends it: it then
    /// refuses new requests.
    fn drive(&mut self, cx: &mut Context<'_>) -> Result<(), Error> {
        while !self.ended {
            match self.connection.poll_message(cx) {
                Poll::Ready(Some(Ok(AsyncMessage::Notification(notification)))) => {
                    self.notifications.push_back(notification);
                }
                Poll::Ready(Some(Ok(AsyncMessage::Notice(notice)))) => {
                    log::info!("{}: {}", notice.severity(), notice.message());
                }
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(error))) => {
                    self.ended = true;
                    return Err(error);
                }
                Poll::Ready(None) => self.ended = true,
                Poll::Pending => break,
            }
        }
        Ok(())
    }
}

impl Driver {
    /// Connects as `config` says, over `tls`.
    pub fn connect<T>(config: &tokio_postgres::Config, tls: T) -> super::Result<Driver>
    where
        T: MakeTlsConnect<Socket> + 'static + Send,
        T::TlsConnect: Send,
        T::Stream: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(super::Error::Runtime)?;
        let (client, connection) = runtime.block_on(config.connect(tls))?;
        Ok(Driver {
            runtime,
            wire: Wire {
                connection: Box::new(connection),
                ended: false,
                notifications: VecDeque::new(),
            },
            client: std::mem::ManuallyDrop::new(Arc::new(client)),
            unanswered: VecDeque::new(),
            failed_ahead: false,
        })
    }

    pub fn client(&self) -> &Arc<tokio_postgres::Client> {
        &self.client
    }

    /// Runs the driver's runtime until `step` is ready, for at most
    /// `within` (`None` when it was not ready in time): every wait of this
    /// connection, `step` given the connection and the statements sent
    /// ahead each time something may have moved.
    fn block_on<T>(
        &mut self,
        within: Option<Duration>,
        mut step: impl FnMut(&mut Wire, &mut VecDeque<Unanswered>, &mut Context<'_>) -> Poll<T>,
    ) -> Option<T> {
        let Driver {
            runtime,
            wire,
            unanswered,
            ..
        } = self;
        let ready = std::future::poll_fn(|cx| step(wire, unanswered, cx));
        match within {
            None => Some(runtime.block_on(ready)),
            // The timer is made inside the runtime, which it needs.
            Some(within) => runtime
                .block_on(async { tokio::time::timeout(within, ready).await })
                .ok(),
        }
    }

    /// Runs `future` (a request on [`Driver::client`]) to its end, driving
    /// the connection meanwhile; then the first failure of a statement sent
    /// before it ([`Driver::send`]), if any, is the error, else its own
    /// result.
    pub fn wait<T>(&mut self, future: impl Future<Output = Result<T, Error>>) -> super::Result<T> {
        let mut future = std::pin::pin!(future);
        let result = self
            .block_on(None, |wire, unanswered, cx| {
                // The connection's failure (the server ended the session) is
                // every waiting call's error, as it is the `postgres` crate's.
                wire.drive(cx)?;
                // Their answers come first; read as they arrive, so that none
                // waits in its channel while the connection waits for room.
                for sent in unanswered.iter_mut() {
                    sent.poll(cx);
                }
                match future.as_mut().poll(cx) {
                    Poll::Ready(result) => Poll::Ready(result.map_err(super::Error::from)),
                    // A request made after the end is refused by the client
                    // at once; one made before it would wait for ever.
                    Poll::Pending if wire.ended => Poll::Ready(Err(super::Error::Closed)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .unwrap_or(Err(super::Error::Closed));
        if self.wire.ended {
            // Their answers will not come.
            self.unanswered.clear();
        }
        match self.answers() {
            Err(earlier) => Err(earlier.into()),
            Ok(()) => result,
        }
    }

    /// Sends `answer`'s statement (a request on [`Driver::client`] that sends
    /// when first polled) without waiting: its answer is read by the next
    /// call that waits, whose error its failure becomes.
    pub fn send(&mut self, answer: Answer) {
        let mut sent = Unanswered { answer, done: None };
        // The first poll encodes the statement and queues it on the
        // connection, which `push` writes out.
        sent.poll(&mut Context::from_waker(Waker::noop()));
        self.unanswered.push_back(sent);
        self.push();
    }

    /// Writes what is queued on the connection now, and reads what has
    /// arrived, without waiting for anything: a statement sent ahead reaches
    /// the server at once, which runs it while the writer prepares the next.
    fn push(&mut self) {
        let driven = self.block_on(None, |wire, unanswered, cx| {
            let driven = wire.drive(cx);
            if driven.is_ok() {
                for sent in unanswered.iter_mut() {
                    sent.poll(cx);
                }
            }
            Poll::Ready(driven)
        });
        // The next call that waits finds the connection ended.
        if let Some(Err(error)) = driven {
            log::warn!("the connection to PostgreSQL failed: {error}");
        }
    }

    /// Whether statements were sent ([`Driver::send`]) whose answers no call
    /// has read.
    pub fn has_unanswered(&self) -> bool {
        !self.unanswered.is_empty()
    }

    /// Reads the answers of every statement sent: the first failure among
    /// them, if any.
    pub fn settle(&mut self) -> super::Result<()> {
        if self.unanswered.is_empty() {
            return Ok(());
        }
        self.block_on(None, |wire, unanswered, cx| {
            wire.drive(cx)?;
            let mut all = true;
            for sent in unanswered.iter_mut() {
                all &= sent.poll(cx);
            }
            if all {
                Poll::Ready(Ok(()))
            } else if wire.ended {
                Poll::Ready(Err(super::Error::Closed))
            } else {
                Poll::Pending
            }
        })
        .unwrap_or(Err(super::Error::Closed))
        .inspect_err(|_| self.unanswered.clear())?;
        Ok(self.answers()?)
    }

    /// Takes the answers read so far, in order, up to the first not yet
    /// read: the first failure among them, if any (the rest are dropped).
    fn answers(&mut self) -> Result<(), Error> {
        while let Some(sent) = self.unanswered.front_mut() {
            match sent.done.take() {
                None => return Ok(()),
                Some(Ok(_)) => {
                    self.unanswered.pop_front();
                }
                Some(Err(error)) => {
                    // The rest failed for its sake (or would have).
                    self.unanswered.clear();
                    self.failed_ahead = true;
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// Whether a call returned the failure of a statement sent ahead since
    /// this was last asked.
    pub fn take_failed_ahead(&mut self) -> bool {
        std::mem::take(&mut self.failed_ahead)
    }

    /// Forgets the statements sent and not yet answered (their transaction
    /// is being rolled back; their answers are read and dropped by the next
    /// call that waits).
    pub fn forget_unanswered(&mut self) {
        // Dropping a request's receiver does not stop its answer: the
        // connection reads it and finds no one waiting.
        self.unanswered.clear();
    }

    /// The next notification (`LISTEN`) within `within`, or one already
    /// there.
    pub fn notification(&mut self, within: Duration) -> super::Result<Option<Notification>> {
        if self.wire.notifications.is_empty() && !self.wire.ended {
            let heard = self.block_on(Some(within), |wire, _, cx| {
                wire.drive(cx)?;
                if !wire.notifications.is_empty() || wire.ended {
                    Poll::Ready(Ok::<(), Error>(()))
                } else {
                    Poll::Pending
                }
            });
            if let Some(Err(error)) = heard {
                return Err(super::Error::from(error));
            }
        }
        match self.wire.notifications.pop_front() {
            None if self.wire.ended => Err(super::Error::Closed),
            heard => Ok(heard),
        }
    }

    /// Notifications already read, without waiting.
    pub fn more_notifications(&mut self) -> Result<Vec<Notification>, Error> {
        self.block_on(None, |wire, _, cx| Poll::Ready(wire.drive(cx)))
            .unwrap_or(Ok(()))?;
        Ok(self.wire.notifications.drain(..).collect())
    }
}

impl Drop for Driver {
    /// Closes the connection: the client is dropped (the connection then
    /// tells the server it is leaving) and the connection driven to its end,
    /// for at most a second.
    fn drop(&mut self) {
        // `send`'s futures hold the client too.
        self.unanswered.clear();
        // SAFETY: dropped once, here; never used again.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.client) };
        self.block_on(Some(Duration::from_secs(1)), |wire, _, cx| {
            let _ = wire.drive(cx);
            if wire.ended {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        });
    }
}
