//! Channel B: tool events to Dynamo's ZeroMQ ingest, best effort.
//!
//! A PUSH socket *connects* to the endpoint Dynamo binds (PULL). Each event is one 3-frame
//! message: topic, a big-endian u64 sequence number (from 0; gaps show drops downstream) and
//! the msgpack record. Publishing never waits: events go into a bounded queue in front of one
//! background task that owns the socket, and are dropped and counted when the queue is full
//! or no peer is connected. The run's speed and result never depend on the endpoint.
//!
//! zmq.rs's PUSH does not reconnect and its `connect` waits for a peer, so the task connects
//! with a short timeout, retries at most twice a second, bounds every send, and starts over
//! after a failed send. At the end, [`Relay::close`] drains the queue for at most a short
//! linger, and only when a peer is connected: with nobody listening there is nothing to wait
//! for. zmq.rs writes to the wire from its own task after `send` returns, so the last
//! message gets a brief moment to leave, counted from when it was sent: at the end of a real
//! run, that moment has long passed.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use zeromq::{PushSocket, Socket, SocketOptions, SocketSend, ZmqMessage};

use crate::sync::LockExt;

const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);
const RECONNECT_INTERVAL: Duration = Duration::from_millis(500);
const SEND_TIMEOUT: Duration = Duration::from_millis(500);
/// Time zmq.rs's writer gets to put the last message on the wire, from when it was sent.
const WIRE_FLUSH: Duration = Duration::from_millis(2);

/// A record and its sequence number, on its way to the socket.
type Queued = (u64, Vec<u8>);

#[derive(Debug, Default)]
struct Counters {
    queued: AtomicU64,
    sent: AtomicU64,
    dropped: AtomicU64,
    /// A peer is connected right now.
    connected: AtomicBool,
}

pub struct Relay {
    endpoint: String,
    topic: String,
    capacity: usize,
    sequence: AtomicU64,
    counters: Arc<Counters>,
    sender: std::sync::Mutex<Option<mpsc::Sender<Queued>>>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayCounts {
    pub sent: u64,
    pub dropped: u64,
}

impl Relay {
    /// Checks the endpoint and starts the sender task (call inside the runtime). An endpoint
    /// zmq cannot parse is an error for the caller to report as a warning.
    pub fn start(endpoint: &str, topic: &str, capacity: usize) -> Result<Relay, String> {
        let parsed = zeromq::Endpoint::from_str(endpoint)
            .map_err(|err| format!("invalid ZeroMQ endpoint '{endpoint}': {err}"))?;
        let capacity = capacity.max(1);
        let (tx, rx) = mpsc::channel(capacity);
        let counters = Arc::new(Counters::default());
        let task = tokio::spawn(send_loop(
            parsed.to_string(),
            topic.to_string(),
            rx,
            counters.clone(),
        ));
        Ok(Relay {
            endpoint: endpoint.to_string(),
            topic: topic.to_string(),
            capacity,
            sequence: AtomicU64::new(0),
            counters,
            sender: std::sync::Mutex::new(Some(tx)),
            task: std::sync::Mutex::new(Some(task)),
        })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Queues one record; never waits. A full queue drops it (counted).
    pub fn publish(&self, payload: Vec<u8>) {
        let sequence = self.sequence.fetch_add(1, Ordering::SeqCst);
        let sender = self.sender.lock_or_recover();
        let queued = sender
            .as_ref()
            .is_some_and(|tx| tx.try_send((sequence, payload)).is_ok());
        if queued {
            self.counters.queued.fetch_add(1, Ordering::SeqCst);
        } else {
            self.counters.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub fn counts(&self) -> RelayCounts {
        RelayCounts {
            sent: self.counters.sent.load(Ordering::SeqCst),
            dropped: self.counters.dropped.load(Ordering::SeqCst),
        }
    }

    /// Stops accepting events and lets the queue drain for at most `linger`; whatever is
    /// still queued then is dropped (and counted).
    pub async fn close(&self, linger: Duration) -> RelayCounts {
        drop(self.sender.lock_or_recover().take());
        let task = self.task.lock_or_recover().take();
        if let Some(mut task) = task {
            let connected = self.counters.connected.load(Ordering::SeqCst);
            if !connected || tokio::time::timeout(linger, &mut task).await.is_err() {
                task.abort();
            }
        }
        let c = &self.counters;
        let accounted = c.sent.load(Ordering::SeqCst) + c.dropped.load(Ordering::SeqCst);
        let total = c.queued.load(Ordering::SeqCst) + self.dropped_at_publish();
        if total > accounted {
            c.dropped.fetch_add(total - accounted, Ordering::SeqCst);
        }
        self.counts()
    }

    /// Drops that never entered the queue (full, or published after close).
    fn dropped_at_publish(&self) -> u64 {
        self.sequence.load(Ordering::SeqCst) - self.counters.queued.load(Ordering::SeqCst)
    }
}

async fn send_loop(
    endpoint: String,
    topic: String,
    mut rx: mpsc::Receiver<Queued>,
    counters: Arc<Counters>,
) {
    let topic = Bytes::from(topic.into_bytes());
    let mut socket: Option<PushSocket> = None;
    let mut next_attempt = Instant::now();
    let mut last_sent: Option<Instant> = None;
    while let Some((sequence, payload)) = rx.recv().await {
        if socket.is_none() && Instant::now() >= next_attempt {
            socket = connect(&endpoint).await;
            counters.connected.store(socket.is_some(), Ordering::SeqCst);
            if socket.is_none() {
                next_attempt = Instant::now() + RECONNECT_INTERVAL;
            }
        }
        let Some(push) = socket.as_mut() else {
            counters.dropped.fetch_add(1, Ordering::SeqCst);
            continue;
        };
        let frames = vec![
            topic.clone(),
            Bytes::copy_from_slice(&sequence.to_be_bytes()),
            Bytes::from(payload),
        ];
        let message = match ZmqMessage::try_from(frames) {
            Ok(message) => message,
            Err(_) => {
                counters.dropped.fetch_add(1, Ordering::SeqCst);
                continue;
            }
        };
        match tokio::time::timeout(SEND_TIMEOUT, push.send(message)).await {
            Ok(Ok(())) => {
                counters.sent.fetch_add(1, Ordering::SeqCst);
                last_sent = Some(Instant::now());
            }
            _ => {
                counters.dropped.fetch_add(1, Ordering::SeqCst);
                counters.connected.store(false, Ordering::SeqCst);
                socket = None;
                next_attempt = Instant::now();
            }
        }
    }
    if let Some(sent) = last_sent {
        tokio::time::sleep(WIRE_FLUSH.saturating_sub(sent.elapsed())).await;
    }
}

async fn connect(endpoint: &str) -> Option<PushSocket> {
    let mut options = SocketOptions::default();
    options.connect_timeout(CONNECT_TIMEOUT);
    let mut socket = PushSocket::with_options(options);
    match tokio::time::timeout(
        CONNECT_TIMEOUT + Duration::from_millis(100),
        socket.connect(endpoint),
    )
    .await
    {
        Ok(Ok(())) => Some(socket),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeromq::{PullSocket, SocketRecv};

    async fn pull() -> (PullSocket, String) {
        let mut socket = PullSocket::new();
        let endpoint = socket.bind("tcp://127.0.0.1:0").await.unwrap();
        (socket, endpoint.to_string())
    }

    #[tokio::test]
    async fn frames_reach_a_real_pull_socket_with_topic_and_sequence() {
        let (mut pull, endpoint) = pull().await;
        let relay = Relay::start(&endpoint, "agent-tool-events", 16).unwrap();
        relay.publish(b"first".to_vec());
        relay.publish(b"second".to_vec());
        for (expected_seq, expected) in [(0u64, &b"first"[..]), (1, b"second")] {
            let message = tokio::time::timeout(Duration::from_secs(5), pull.recv())
                .await
                .unwrap()
                .unwrap();
            let frames: Vec<Bytes> = message.into_vec();
            assert_eq!(frames.len(), 3);
            assert_eq!(&frames[0][..], b"agent-tool-events");
            assert_eq!(
                u64::from_be_bytes(frames[1][..].try_into().unwrap()),
                expected_seq
            );
            assert_eq!(&frames[2][..], expected);
        }
        let counts = relay.close(Duration::from_millis(250)).await;
        assert_eq!(
            counts,
            RelayCounts {
                sent: 2,
                dropped: 0
            }
        );
    }

    #[tokio::test]
    async fn with_no_peer_publishing_never_waits_and_everything_is_counted_dropped() {
        // A port nobody listens on.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("tcp://{}", free.local_addr().unwrap());
        drop(free);
        let relay = Relay::start(&endpoint, "agent-tool-events", 1000).unwrap();
        let started = Instant::now();
        for i in 0..500u32 {
            relay.publish(i.to_be_bytes().to_vec());
        }
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "{:?}",
            started.elapsed()
        );
        let closing = Instant::now();
        let counts = relay.close(Duration::from_millis(250)).await;
        assert!(
            closing.elapsed() < Duration::from_millis(50),
            "no peer, no linger: {:?}",
            closing.elapsed()
        );
        assert_eq!(
            counts,
            RelayCounts {
                sent: 0,
                dropped: 500
            }
        );
    }

    #[tokio::test]
    async fn a_full_queue_drops_instead_of_blocking() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("tcp://{}", free.local_addr().unwrap());
        drop(free);
        let relay = Relay::start(&endpoint, "t", 4).unwrap();
        for _ in 0..100 {
            relay.publish(vec![0; 8]);
        }
        assert!(relay.counts().dropped >= 90, "{:?}", relay.counts());
        let counts = relay.close(Duration::from_millis(100)).await;
        assert_eq!(counts.sent + counts.dropped, 100);
    }

    #[tokio::test]
    async fn a_stalled_peer_costs_at_most_the_linger() {
        // A listener that accepts TCP but never speaks ZMTP: the handshake never completes.
        let hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("tcp://{}", hole.local_addr().unwrap());
        let relay = Relay::start(&endpoint, "t", 100).unwrap();
        for _ in 0..10 {
            relay.publish(vec![1]);
        }
        let closing = Instant::now();
        let counts = relay.close(Duration::from_millis(250)).await;
        assert!(
            closing.elapsed() < Duration::from_millis(300),
            "{:?}",
            closing.elapsed()
        );
        assert_eq!(counts.sent + counts.dropped, 10);
    }

    #[tokio::test]
    async fn an_unparseable_endpoint_is_an_error_to_report() {
        let err = Relay::start("not an endpoint", "t", 4).err().unwrap();
        assert!(
            err.starts_with("invalid ZeroMQ endpoint 'not an endpoint': "),
            "{err}"
        );
    }
}
