//! Channel B: tool events to Dynamo's ZeroMQ ingest, best effort.
//!
//! A PUSH socket *connects* to the endpoint Dynamo binds (PULL). Each event is one 3-frame
//! message: topic, a big-endian u64 sequence number (from 0; gaps show drops downstream) and
//! the msgpack record. Publishing never waits: events go into a bounded queue in front of one
//! background task that owns the socket, and are dropped and counted when the queue is full
//! or no peer is connected. The run's speed and result never depend on the endpoint.
//!
//! Events leave in batches, at most one a [`HOLD`]: publishing wakes the sender only when it
//! is idle, and the sender then sends what was queued once a [`HOLD`] has passed, again and
//! again until a [`HOLD`] passes with nothing to send. Each batch costs one wake-up of the
//! sender, one of zmq.rs's writer and one write, however many events it carries, so what the
//! tee costs is bounded by time, not by the number of tool calls: sent one by one, every event
//! cost all three, which on loopback was most of what the tee cost a run of quick tool calls.
//!
//! zmq.rs's PUSH does not reconnect and its `connect` waits for a peer, so the task connects
//! with a short timeout, retries at most twice a second, bounds every send, and starts over
//! after a failed send. A refused connect (nobody listening) ends its attempt at once rather
//! than being retried inside zmq.rs, so that "nobody is there" is known within a system call.
//! Between attempts, with no peer, an event is dropped (and counted) where it is published,
//! without waking the task only for it to drop it.
//!
//! Every event ends up in exactly one count. `sent`: the kernel took its bytes, so it
//! reaches the peer even if this process exits now ([`outbound`] reads the kernel's count).
//! `unconfirmed`: handed to zmq.rs, whose own queue dies with the process or a torn-down
//! connection, and not seen to leave before that. `dropped`: never handed over. At the end,
//! [`Relay::close`] waits at most a short linger for the queue to drain and the kernel to take
//! it, unless the sender is resting after a failed attempt: with nobody listening there is
//! nothing to wait for. An attempt still under way is waited for, so a run shorter than the
//! handshake (a replayed one, or one that fails at once) still delivers its events to a peer
//! that is listening.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use zeromq::{Endpoint, Host, PushSocket, Socket, SocketOptions, SocketSend, ZmqMessage};

use super::outbound::{Peer, SocketProbe};
use crate::sync::LockExt;

const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);
const RECONNECT_INTERVAL: Duration = Duration::from_millis(500);
const SEND_TIMEOUT: Duration = Duration::from_millis(500);
/// How often the end of a run asks the kernel whether the last bytes have left.
const CONFIRM_POLL: Duration = Duration::from_millis(1);
/// How many times the end of a run lets other tasks run before it polls on the timer.
const CONFIRM_YIELDS: u32 = 32;
/// Events handed over before the kernel is asked which have left. Asking takes three system
/// calls, and the counts are read only at the end, so it is asked once per this many events
/// (which bounds what a long run keeps in flight) and at the end.
const CONFIRM_EVERY: usize = 64;
/// How long the sender gathers events before it sends them: the longest an event waits in the
/// queue. Short beside any tool call worth watching live, long beside a run of quick ones.
pub const HOLD: Duration = Duration::from_millis(20);

/// A record and its sequence number, on its way to the socket.
type Queued = (u64, Vec<u8>);

#[derive(Debug, Default)]
struct Counters {
    queued: AtomicU64,
    sent: AtomicU64,
    dropped: AtomicU64,
    unconfirmed: AtomicU64,
    /// Handed to the current connection, not yet confirmed.
    in_flight: AtomicU64,
    /// A peer is connected right now.
    connected: AtomicBool,
    /// The sender is awake and takes the queue within [`HOLD`]: publishing need not wake it.
    watching: AtomicBool,
    /// Times the sender took events from the queue to send them.
    batches: AtomicU64,
    /// While no peer is connected and no attempt to connect is due: until when (milliseconds
    /// from the relay's start, at least 1), so that an event then is dropped where it is
    /// published instead of waking the sender to drop it. 0 otherwise.
    resting_until: AtomicU64,
}

impl Counters {
    /// No peer is connected and no attempt to connect is under way or due: what is published
    /// now can only be dropped.
    fn resting(&self, epoch: Instant) -> bool {
        let until = self.resting_until.load(Ordering::SeqCst);
        until != 0 && millis_since(epoch, Instant::now()) < until
    }

    /// Notes whether the sender has a connection, and if not, when it next tries.
    fn set_connection(&self, connected: bool, epoch: Instant, next_attempt: Instant) {
        self.connected.store(connected, Ordering::SeqCst);
        let resting = if connected {
            0
        } else {
            millis_since(epoch, next_attempt).max(1)
        };
        self.resting_until.store(resting, Ordering::SeqCst);
    }
}

/// Whole milliseconds from `epoch` to `at`, rounded up.
fn millis_since(epoch: Instant, at: Instant) -> u64 {
    let micros = at.saturating_duration_since(epoch).as_micros();
    u64::try_from(micros.div_ceil(1000)).unwrap_or(u64::MAX)
}

/// The tool-event endpoint is not one ZeroMQ can connect to.
#[derive(Debug, thiserror::Error)]
#[error("invalid ZeroMQ endpoint '{endpoint}': {source}")]
pub struct RelayError {
    /// The endpoint, as given.
    pub endpoint: String,
    /// Why zmq.rs refused it.
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// A ZeroMQ endpoint (`tcp://HOST:PORT` or `ipc://PATH`), read as zmq.rs reads one when it
/// connects.
pub fn parse_endpoint(text: &str) -> Result<Endpoint, Box<dyn std::error::Error + Send + Sync>> {
    Ok(text.parse::<Endpoint>()?)
}

/// The tool-event sender: a bounded queue in front of the background task that owns the
/// PUSH socket.
pub struct Relay {
    endpoint: String,
    topic: String,
    capacity: usize,
    sequence: AtomicU64,
    counters: Arc<Counters>,
    /// When the relay started: [`Counters::resting_until`] counts from here.
    epoch: Instant,
    sender: std::sync::Mutex<Option<mpsc::Sender<Queued>>>,
    wakes: Arc<Wakes>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

/// What wakes the sender: an event while it is idle, and the end of the run.
#[derive(Debug, Default)]
struct Wakes {
    first: Notify,
    closing: Notify,
}

/// Where the run's tool events ended up. Once [`Relay::close`] returns, every event is in
/// exactly one count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayCounts {
    /// Taken by the kernel: delivered unless the peer itself goes away.
    pub sent: u64,
    /// Never handed to the socket (full queue, no peer, failed send).
    pub dropped: u64,
    /// Handed to the socket library but not seen to leave the process.
    pub unconfirmed: u64,
}

impl Relay {
    /// Checks the endpoint and starts the sender task (call inside the runtime). An endpoint
    /// zmq cannot parse is an error for the caller to report as a warning.
    pub fn start(endpoint: &str, topic: &str, capacity: usize) -> Result<Relay, RelayError> {
        let parsed = parse_endpoint(endpoint).map_err(|err| RelayError {
            endpoint: endpoint.to_string(),
            source: err,
        })?;
        let capacity = capacity.max(1);
        let (tx, rx) = mpsc::channel(capacity);
        let counters = Arc::new(Counters::default());
        let epoch = Instant::now();
        let wakes = Arc::new(Wakes::default());
        let task = tokio::spawn(send_loop(
            parsed,
            topic.to_string(),
            rx,
            counters.clone(),
            wakes.clone(),
            epoch,
        ));
        Ok(Relay {
            endpoint: endpoint.to_string(),
            topic: topic.to_string(),
            capacity,
            sequence: AtomicU64::new(0),
            counters,
            epoch,
            sender: std::sync::Mutex::new(Some(tx)),
            wakes,
            task: std::sync::Mutex::new(Some(task)),
        })
    }

    /// The endpoint, as given.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The topic frame of every message.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Records the queue holds (at least 1).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Queues one record; never waits. A full queue drops it (counted), and so does a relay
    /// with no peer and no attempt to connect due.
    pub fn publish(&self, payload: Vec<u8>) {
        self.publish_with(|| Some(payload));
    }

    /// Queues the record `encode` makes, as [`Relay::publish`] does. An event that would be
    /// dropped where it is published (no peer, and no attempt to connect due) is dropped
    /// without being made: a tee with nobody listening does not encode what it drops. `None`
    /// from `encode` is no event at all: it takes no sequence number and no count.
    pub fn publish_with(&self, encode: impl FnOnce() -> Option<Vec<u8>>) {
        if self.counters.resting(self.epoch) {
            self.sequence.fetch_add(1, Ordering::SeqCst);
            self.counters.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        }
        let Some(payload) = encode() else {
            return;
        };
        let sequence = self.sequence.fetch_add(1, Ordering::SeqCst);
        let sender = self.sender.lock_or_recover();
        let queued = sender
            .as_ref()
            .is_some_and(|tx| tx.try_send((sequence, payload)).is_ok());
        drop(sender);
        if !queued {
            self.counters.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        }
        self.counters.queued.fetch_add(1, Ordering::SeqCst);
        if !self.counters.watching.swap(true, Ordering::SeqCst) {
            self.wakes.first.notify_one();
        }
    }

    /// The counts so far: events still queued or handed to the socket library are in none of
    /// them until [`Relay::close`].
    pub fn counts(&self) -> RelayCounts {
        RelayCounts {
            sent: self.counters.sent.load(Ordering::SeqCst),
            dropped: self.counters.dropped.load(Ordering::SeqCst),
            unconfirmed: self.counters.unconfirmed.load(Ordering::SeqCst),
        }
    }

    /// Stops accepting events and lets the queue drain, and the kernel take it, for at most
    /// `linger`. What is still queued then is dropped; what zmq.rs still holds is unconfirmed.
    /// A sender resting after a failed attempt (nobody listening) is not waited for; one
    /// connected, or connecting, is.
    pub async fn close(&self, linger: Duration) -> RelayCounts {
        drop(self.sender.lock_or_recover().take());
        // Whatever the sender waits for, it finds the queue closed and sends what is left.
        self.wakes.first.notify_one();
        self.wakes.closing.notify_one();
        let task = self.task.lock_or_recover().take();
        if let Some(mut task) = task {
            let resting = self.counters.resting(self.epoch);
            if resting || tokio::time::timeout(linger, &mut task).await.is_err() {
                task.abort();
                // Let the abort land, so nothing moves between the counters below.
                let _ = task.await;
            }
        }
        let c = &self.counters;
        c.unconfirmed
            .fetch_add(c.in_flight.swap(0, Ordering::SeqCst), Ordering::SeqCst);
        let accounted = c.sent.load(Ordering::SeqCst)
            + c.dropped.load(Ordering::SeqCst)
            + c.unconfirmed.load(Ordering::SeqCst);
        let total = self.sequence.load(Ordering::SeqCst);
        if total > accounted {
            c.dropped.fetch_add(total - accounted, Ordering::SeqCst);
        }
        self.counts()
    }
}

/// One connection to the peer and the events handed to it that the kernel has not taken yet.
struct Connection {
    socket: PushSocket,
    probe: Option<SocketProbe>,
    /// Bytes handed to zmq.rs on this connection, as framed on the wire.
    handed: u64,
    /// Where each unconfirmed event ends, in `handed` bytes.
    pending: VecDeque<u64>,
}

impl Connection {
    fn handed_over(&mut self, wire_bytes: u64, counters: &Counters) {
        self.handed += wire_bytes;
        if self.probe.is_none() {
            // Nothing can tell when these bytes leave: the event is unconfirmed now, rather
            // than held (a long run's worth of them) until the end to be counted so.
            counters.unconfirmed.fetch_add(1, Ordering::SeqCst);
            return;
        }
        self.pending.push_back(self.handed);
        counters.in_flight.fetch_add(1, Ordering::SeqCst);
        if self.pending.len() >= CONFIRM_EVERY {
            self.confirm(counters);
        }
    }

    /// Moves the events whose bytes the kernel has taken from in flight to sent.
    fn confirm(&mut self, counters: &Counters) {
        let Some(taken) = self.probe.as_mut().and_then(|p| p.taken(self.handed)) else {
            return;
        };
        while self.pending.front().is_some_and(|end| *end <= taken) {
            self.pending.pop_front();
            counters.in_flight.fetch_sub(1, Ordering::SeqCst);
            counters.sent.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The connection is going away: what it still holds is unconfirmed.
    fn abandon(mut self, counters: &Counters) {
        self.confirm(counters);
        let left = self.pending.len() as u64;
        counters.in_flight.fetch_sub(left, Ordering::SeqCst);
        counters.unconfirmed.fetch_add(left, Ordering::SeqCst);
    }
}

async fn send_loop(
    endpoint: Endpoint,
    topic: String,
    mut rx: mpsc::Receiver<Queued>,
    counters: Arc<Counters>,
    wakes: Arc<Wakes>,
    epoch: Instant,
) {
    let mut sender = Sender {
        topic: Bytes::from(topic.into_bytes()),
        counters,
        epoch,
        // Connect at once, while the run starts, so that a short run's events find the peer
        // connected (zmq.rs's connect first compiles its endpoint parser).
        connection: connect(&endpoint).await,
        next_attempt: Instant::now(),
        endpoint,
    };
    if sender.connection.is_none() {
        sender.next_attempt += RECONNECT_INTERVAL;
    }
    let connected = sender.connection.is_some();
    sender
        .counters
        .set_connection(connected, epoch, sender.next_attempt);
    'idle: loop {
        wakes.first.notified().await;
        loop {
            tokio::select! {
                () = wakes.closing.notified() => {}
                () = tokio::time::sleep(HOLD) => {}
            }
            let mut sent = 0;
            let open = loop {
                match rx.try_recv() {
                    Ok((sequence, payload)) => {
                        sender.send(sequence, payload).await;
                        sent += 1;
                    }
                    Err(mpsc::error::TryRecvError::Empty) => break true,
                    Err(mpsc::error::TryRecvError::Disconnected) => break false,
                }
            };
            if !open {
                break 'idle;
            }
            if sent > 0 {
                sender.counters.batches.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            // A whole HOLD with nothing to send: idle until the next event wakes the sender.
            // One queued between the take above and this store finds `watching` still set
            // and wakes nobody, so look again after it.
            sender.counters.watching.store(false, Ordering::SeqCst);
            if rx.is_empty() {
                continue 'idle;
            }
            sender.counters.watching.store(true, Ordering::SeqCst);
        }
    }
    // The queue is drained: wait (within the caller's linger) for the kernel to take the rest.
    if let Some(mut live) = sender.connection {
        // zmq.rs's writer usually needs only a turn of the runtime to write what was just
        // handed to it; the timer (a millisecond at best) is for a slow peer.
        let mut yields = 0..CONFIRM_YIELDS;
        loop {
            live.confirm(&sender.counters);
            if live.pending.is_empty() || live.probe.is_none() {
                break;
            }
            if yields.next().is_some() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(CONFIRM_POLL).await;
            }
        }
        live.abandon(&sender.counters);
    }
}

/// The sender task's state: the connection, and when to try for one again.
struct Sender {
    endpoint: Endpoint,
    topic: Bytes,
    counters: Arc<Counters>,
    epoch: Instant,
    connection: Option<Connection>,
    next_attempt: Instant,
}

impl Sender {
    /// Hands one event to the connection, connecting first when an attempt is due.
    async fn send(&mut self, sequence: u64, payload: Vec<u8>) {
        let counters = &self.counters;
        if self.connection.is_none() && Instant::now() >= self.next_attempt {
            self.connection = connect(&self.endpoint).await;
            if self.connection.is_none() {
                self.next_attempt = Instant::now() + RECONNECT_INTERVAL;
            }
            counters.set_connection(self.connection.is_some(), self.epoch, self.next_attempt);
        }
        let Some(live) = self.connection.as_mut() else {
            counters.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        };
        let frames = vec![
            self.topic.clone(),
            Bytes::copy_from_slice(&sequence.to_be_bytes()),
            Bytes::from(payload),
        ];
        let wire_bytes = frames.iter().map(|frame| wire_size(frame.len())).sum();
        let Ok(message) = ZmqMessage::try_from(frames) else {
            counters.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        };
        match tokio::time::timeout(SEND_TIMEOUT, live.socket.send(message)).await {
            Ok(Ok(())) => live.handed_over(wire_bytes, counters),
            _ => {
                counters.dropped.fetch_add(1, Ordering::SeqCst);
                if let Some(gone) = self.connection.take() {
                    gone.abandon(counters);
                }
                self.next_attempt = Instant::now();
                // Not resting: the next event reaches the sender, which tries again.
                counters.connected.store(false, Ordering::SeqCst);
            }
        }
    }
}

/// Bytes one ZMTP 3 frame of `len` body bytes takes on the wire: flags, size, body.
fn wire_size(len: usize) -> u64 {
    let header = if len > 255 { 1 + 8 } else { 1 + 1 };
    header + len as u64
}

async fn connect(endpoint: &Endpoint) -> Option<Connection> {
    let peer = peer_of(endpoint).await;
    // The descriptor of the stream zmq.rs connects, for the probe.
    let stream = Arc::new(AtomicI32::new(-1));
    let seen = stream.clone();
    let mut options = SocketOptions::default();
    options
        .connect_timeout(CONNECT_TIMEOUT)
        .no_connect_retry()
        .on_connected(move |fd| seen.store(fd, Ordering::SeqCst));
    let mut socket = PushSocket::with_options(options);
    let connected = tokio::time::timeout(
        CONNECT_TIMEOUT + Duration::from_millis(100),
        socket.connect(&endpoint.to_string()),
    )
    .await;
    if !matches!(connected, Ok(Ok(()))) {
        return None;
    }
    let fd = stream.load(Ordering::SeqCst);
    let probe = peer.and_then(|peer| SocketProbe::at(peer, fd));
    Some(Connection {
        socket,
        probe,
        handed: 0,
        pending: VecDeque::new(),
    })
}

/// The address the connected socket's peer will have.
async fn peer_of(endpoint: &Endpoint) -> Option<Peer> {
    match endpoint {
        Endpoint::Tcp(Host::Ipv4(ip), port) => Some(Peer::Tcp(vec![(*ip, *port).into()])),
        Endpoint::Tcp(Host::Ipv6(ip), port) => Some(Peer::Tcp(vec![(*ip, *port).into()])),
        Endpoint::Tcp(Host::Domain(name), port) => {
            let resolved = tokio::net::lookup_host((name.as_str(), *port)).await.ok()?;
            Some(Peer::Tcp(resolved.collect()))
        }
        Endpoint::Ipc(path) => path.clone().map(Peer::Unix),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
