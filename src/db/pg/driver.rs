//! The blocking connection under [`super::Client`]: tokio-postgres's client
//! and its connection on a small runtime of their own, driven by whichever
//! call waits, as the `postgres` crate drives them, plus what that crate
//! cannot do: statements sent without waiting for their answers
//! ([`Driver::send`]). Such a statement travels with the next one that is
//! waited for, and its answer is read in order before that one's: a
//! statement whose result the writer does not need costs it no round trip
//! of its own (docs/design/performance.md, "PostgreSQL: statements sent
//! ahead").
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
    connection: Box<dyn Messages>,
    /// Whether the connection has ended.
    ended: bool,
    notifications: VecDeque<Notification>,
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
            connection: Box::new(connection),
            ended: false,
            notifications: VecDeque::new(),
            client: std::mem::ManuallyDrop::new(Arc::new(client)),
            unanswered: VecDeque::new(),
            failed_ahead: false,
        })
    }

    pub fn client(&self) -> &Arc<tokio_postgres::Client> {
        &self.client
    }

    /// Runs `future` (a request on [`Driver::client`]) to its end, driving
    /// the connection meanwhile; then the first failure of a statement sent
    /// before it ([`Driver::send`]), if any, is the error, else its own
    /// result.
    pub fn wait<T>(&mut self, future: impl Future<Output = Result<T, Error>>) -> super::Result<T> {
        let mut future = std::pin::pin!(future);
        let Driver {
            runtime,
            connection,
            ended,
            notifications,
            unanswered,
            ..
        } = self;
        let result = runtime.block_on(std::future::poll_fn(|cx| {
            // The connection's failure (the server ended the session) is
            // every waiting call's error, as it is the `postgres` crate's.
            drive(connection.as_mut(), ended, notifications, cx)?;
            // Their answers come first; read as they arrive, so that none
            // waits in its channel while the connection waits for room.
            for sent in unanswered.iter_mut() {
                sent.poll(cx);
            }
            match future.as_mut().poll(cx) {
                Poll::Ready(result) => Poll::Ready(result.map_err(super::Error::from)),
                // A request made after the end is refused by the client at
                // once; one made before it would wait for ever.
                Poll::Pending if *ended => Poll::Ready(Err(super::Error::Closed)),
                Poll::Pending => Poll::Pending,
            }
        }));
        if self.ended {
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
        // connection, which writes it with the next request waited for.
        sent.poll(&mut Context::from_waker(Waker::noop()));
        self.unanswered.push_back(sent);
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
        let Driver {
            runtime,
            connection,
            ended,
            notifications,
            unanswered,
            ..
        } = self;
        runtime
            .block_on(std::future::poll_fn(|cx| {
                drive(connection.as_mut(), ended, notifications, cx)?;
                let mut all = true;
                for sent in unanswered.iter_mut() {
                    all &= sent.poll(cx);
                }
                if all {
                    Poll::Ready(Ok(()))
                } else if *ended {
                    Poll::Ready(Err(super::Error::Closed))
                } else {
                    Poll::Pending
                }
            }))
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
        if let Some(first) = self.notifications.pop_front() {
            return Ok(Some(first));
        }
        if self.ended {
            return Err(super::Error::Closed);
        }
        let Driver {
            runtime,
            connection,
            ended,
            notifications,
            ..
        } = self;
        let heard = runtime.block_on(async {
            tokio::time::timeout(
                within,
                std::future::poll_fn(|cx| {
                    if let Err(error) = drive(connection.as_mut(), ended, notifications, cx) {
                        return Poll::Ready(Err(error));
                    }
                    if !notifications.is_empty() || *ended {
                        Poll::Ready(Ok(()))
                    } else {
                        Poll::Pending
                    }
                }),
            )
            .await
        });
        match heard {
            Ok(Err(error)) => Err(error.into()),
            _ => match self.notifications.pop_front() {
                None if self.ended => Err(super::Error::Closed),
                heard => Ok(heard),
            },
        }
    }

    /// Notifications already read, without waiting.
    pub fn more_notifications(&mut self) -> Result<Vec<Notification>, Error> {
        let Driver {
            runtime,
            connection,
            ended,
            notifications,
            ..
        } = self;
        runtime.block_on(std::future::poll_fn(|cx| {
            Poll::Ready(drive(connection.as_mut(), ended, notifications, cx))
        }))?;
        Ok(self.notifications.drain(..).collect())
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
        let Driver {
            runtime,
            connection,
            ended,
            notifications,
            ..
        } = self;
        let _ = runtime.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(1),
                std::future::poll_fn(|cx| {
                    let _ = drive(connection.as_mut(), ended, notifications, cx);
                    if *ended {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                }),
            )
            .await
        });
    }
}

/// Drives the connection as far as it goes now: reads what arrived (handing
/// each answer to its request), writes what is queued. Notifications are
/// kept, notices logged.
fn drive(
    connection: &mut dyn Messages,
    ended: &mut bool,
    notifications: &mut VecDeque<Notification>,
    cx: &mut Context<'_>,
) -> Result<(), Error> {
    while !*ended {
        match connection.poll_message(cx) {
            Poll::Ready(Some(Ok(AsyncMessage::Notification(notification)))) => {
                notifications.push_back(notification);
            }
            Poll::Ready(Some(Ok(AsyncMessage::Notice(notice)))) => {
                log::info!("{}: {}", notice.severity(), notice.message());
            }
            Poll::Ready(Some(Ok(_))) => {}
            // The connection is done for: it refuses new requests.
            Poll::Ready(Some(Err(error))) => {
                *ended = true;
                return Err(error);
            }
            Poll::Ready(None) => *ended = true,
            Poll::Pending => break,
        }
    }
    Ok(())
}
