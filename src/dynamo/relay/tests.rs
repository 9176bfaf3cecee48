use super::*;
use zeromq::{PullSocket, SocketRecv};

/// A TCP endpoint on a port nobody listens on.
fn nobody_listening() -> String {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("tcp://{}", free.local_addr().unwrap())
}

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
            dropped: 0,
            unconfirmed: 0
        }
    );
}

#[tokio::test]
async fn with_no_peer_publishing_never_waits_and_everything_is_counted_dropped() {
    let endpoint = nobody_listening();
    let relay = Relay::start(&endpoint, "agent-tool-events", 1000).unwrap();
    let started = Instant::now();
    for i in 0..500u32 {
        relay.publish(i.to_be_bytes().to_vec());
    }
    // A publish that waited for the missing peer would not return at all; the bound only has
    // to be far above 500 queue pushes on a loaded two-core machine.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // With no peer there is nothing to linger for: with a linger of a minute, closing well
    // inside it shows the linger was skipped, with a margin no machine load can eat.
    let closing = Instant::now();
    let counts = relay.close(Duration::from_secs(60)).await;
    assert!(
        closing.elapsed() < Duration::from_secs(10),
        "no peer, no linger: {:?}",
        closing.elapsed()
    );
    assert_eq!(
        counts,
        RelayCounts {
            sent: 0,
            dropped: 500,
            unconfirmed: 0
        }
    );
}

#[tokio::test]
async fn a_full_queue_drops_instead_of_blocking() {
    let endpoint = nobody_listening();
    let relay = Relay::start(&endpoint, "t", 4).unwrap();
    for _ in 0..100 {
        relay.publish(vec![0; 8]);
    }
    assert!(relay.counts().dropped >= 90, "{:?}", relay.counts());
    let counts = relay.close(Duration::from_millis(100)).await;
    assert_eq!(counts.sent + counts.dropped + counts.unconfirmed, 100);
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
    // The handshake never completes, so without the linger the close would never end: the
    // linger is the point, with 5 s beyond it for a loaded machine.
    let linger = Duration::from_secs(1);
    let closing = Instant::now();
    let counts = relay.close(linger).await;
    assert!(
        closing.elapsed() < linger + Duration::from_secs(5),
        "{:?}",
        closing.elapsed()
    );
    assert_eq!(counts.sent + counts.dropped + counts.unconfirmed, 10);
}

/// A PULL peer on its own thread that accepts the connection, then stops reading until
/// `resume` fires, then reads everything that ever arrives.
fn stalled_pull(endpoint: &str) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<usize>) {
    let (resume, resumed) = std::sync::mpsc::channel::<()>();
    let endpoint = endpoint.to_string();
    let reader = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut pull = PullSocket::new();
        runtime.block_on(async {
            pull.bind(&endpoint).await.unwrap();
            // Long enough to complete the relay's handshake.
            tokio::time::sleep(Duration::from_millis(400)).await;
        });
        // A current-thread runtime runs nothing between block_on calls: the peer is stalled.
        resumed.recv().unwrap();
        runtime.block_on(async {
            let mut received = 0;
            while let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), pull.recv()).await {
                received += 1;
            }
            received
        })
    });
    (resume, reader)
}

/// The relay runs in its own runtime, shut down the way the CLI ends a run, so that
/// zmq.rs's queue dies as it does when the process exits.
fn never_calls_undelivered_events_sent(endpoint: String) {
    let (resume, reader) = stalled_pull(&endpoint);
    std::thread::sleep(Duration::from_millis(100));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // 64 MiB: more than the kernel's socket buffers hold, all of it within zmq.rs's queue.
    let events = 256u64;
    let counts = runtime.block_on(async {
        let relay = Relay::start(&endpoint, "t", 1000).unwrap();
        for _ in 0..events {
            relay.publish(vec![b'x'; 256 * 1024]);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        relay.close(Duration::from_millis(250)).await
    });
    runtime.shutdown_background();
    resume.send(()).unwrap();
    let received = reader.join().unwrap() as u64;
    assert_eq!(
        counts.sent + counts.dropped + counts.unconfirmed,
        events,
        "{counts:?}"
    );
    assert!(
        counts.sent <= received,
        "{counts:?}, the peer got {received}"
    );
    assert!(received < events, "the stall must lose events: {received}");
    assert!(
        counts.unconfirmed > 0,
        "{counts:?}, the peer got {received}"
    );
}

#[test]
fn a_stalled_tcp_peer_never_counts_undelivered_events_as_sent() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    never_calls_undelivered_events_sent(format!("tcp://127.0.0.1:{port}"));
}

#[test]
fn a_stalled_ipc_peer_never_counts_undelivered_events_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    never_calls_undelivered_events_sent(format!("ipc://{}", dir.path().join("tee").display()));
}

#[tokio::test]
async fn an_unparseable_endpoint_is_an_error_to_report() {
    let err = Relay::start("not an endpoint", "t", 4)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("invalid ZeroMQ endpoint 'not an endpoint': "),
        "{err}"
    );
}

/// zmq.rs's endpoint parser as released (0.7.0), two regular expressions: the reference the
/// vendored parser, which does without them, must agree with.
fn parsed_as_released(text: &str) -> Option<Endpoint> {
    use std::sync::LazyLock;
    static TRANSPORT: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"^([[:lower:]]+)://(.+)$").unwrap());
    static HOST_PORT: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"^(.+):([0-9]+)$").unwrap());
    let (transport, host_port) = (&*TRANSPORT, &*HOST_PORT);
    let caps = transport.captures(text)?;
    let address = caps.get(2)?.as_str();
    match caps.get(1)?.as_str() {
        "tcp" => {
            let caps = host_port.captures(address)?;
            let port: u16 = caps.get(2)?.as_str().parse().ok()?;
            let host: Host = caps.get(1)?.as_str().parse().ok()?;
            Some(Endpoint::Tcp(host, port))
        }
        "ipc" => Some(Endpoint::Ipc(Some(address.into()))),
        _ => None,
    }
}

#[test]
fn endpoints_are_read_as_the_released_zmq_read_them() {
    for text in [
        "tcp://127.0.0.1:20390",
        "tcp://localhost:5555",
        "tcp://[::1]:5555",
        "tcp://::1:5555",
        "tcp://a:b:5555",
        "tcp://a:5555:b",
        "tcp://a:+5555",
        "tcp://a\n:5555",
        "tcp://a:5555\n",
        "ipc:///tmp/worker.sock",
        "ipc://relative/path",
        "ipc://a\nb",
        "ipc://",
        "tcp://127.0.0.1:99999",
        "tcp://127.0.0.1:",
        "tcp://:5555",
        "tcp://127.0.0.1",
        "tcp://",
        "tcp://x://y:1",
        "TCP://127.0.0.1:5555",
        "udp://127.0.0.1:5555",
        "127.0.0.1:5555",
        "://127.0.0.1:5555",
        "",
    ] {
        let ours = parse_endpoint(text).ok();
        assert_eq!(ours, parsed_as_released(text), "{text:?}");
    }
}

mod endpoint_properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Endpoints glued from the pieces that decide a parse: mostly a known transport and
        /// its separator, then an address of hosts, colons, ports and stray characters.
        #[test]
        fn any_endpoint_is_read_as_the_released_zmq_read_it(
            transport in prop_oneof![
                4 => Just("tcp"), 2 => Just("ipc"), 1 => Just("Tcp"), 1 => Just("udp"), 1 => Just(""),
            ],
            separator in prop_oneof![6 => Just("://"), 1 => Just(":/"), 1 => Just("")],
            address in proptest::collection::vec(prop_oneof![
                Just("://"), Just(":"), Just("["), Just("]"), Just("::1"), Just("127.0.0.1"),
                Just("host"), Just("é"), Just("5555"), Just("65536"), Just("0"), Just("/"),
                Just("\n"), Just(" "), Just("+"),
            ], 0..6),
        ) {
            let text = format!("{transport}{separator}{}", address.concat());
            let ours = parse_endpoint(&text).ok();
            prop_assert_eq!(ours, parsed_as_released(&text), "{:?}", text);
        }
    }
}

#[tokio::test]
async fn with_no_peer_and_no_attempt_due_an_event_is_dropped_where_it_is_published() {
    let endpoint = nobody_listening();
    let relay = Relay::start(&endpoint, "t", 100).unwrap();
    // The first attempt to connect is refused; the sender then rests until the next one.
    let waited = Instant::now();
    while relay.counters.resting_until.load(Ordering::SeqCst) == 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "no attempt ended"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Counted at once, on this task, without waiting for the sender to see them, and never
    // encoded.
    let encoded = std::cell::Cell::new(0);
    for _ in 0..10 {
        relay.publish_with(|| {
            encoded.set(encoded.get() + 1);
            Some(vec![1])
        });
    }
    assert_eq!(relay.counts().dropped, 10);
    assert_eq!(encoded.get(), 0, "a dropped event was encoded");
    let counts = relay.close(Duration::from_millis(100)).await;
    assert_eq!(
        counts,
        RelayCounts {
            sent: 0,
            dropped: 10,
            unconfirmed: 0
        }
    );
}

#[tokio::test]
async fn a_record_that_cannot_be_made_is_no_event() {
    let (mut pull, endpoint) = pull().await;
    let relay = Relay::start(&endpoint, "t", 100).unwrap();
    relay.publish_with(|| None);
    relay.publish(vec![7]);
    // The one event takes the first sequence number: the record that was not made left no gap.
    assert_eq!(sequences(&mut pull, 1).await, vec![0]);
    let counts = relay.close(Duration::from_secs(2)).await;
    assert_eq!(
        counts,
        RelayCounts {
            sent: 1,
            dropped: 0,
            unconfirmed: 0
        }
    );
}

#[tokio::test]
async fn a_connection_whose_socket_cannot_be_probed_holds_nothing_per_event() {
    let counters = Counters::default();
    let mut connection = Connection {
        socket: PushSocket::new(),
        probe: None,
        handed: 0,
        pending: VecDeque::new(),
    };
    for _ in 0..1000 {
        connection.handed_over(20, &counters);
    }
    assert!(connection.pending.is_empty());
    assert_eq!(counters.in_flight.load(Ordering::SeqCst), 0);
    assert_eq!(counters.unconfirmed.load(Ordering::SeqCst), 1000);
    connection.abandon(&counters);
    assert_eq!(counters.unconfirmed.load(Ordering::SeqCst), 1000);
    assert_eq!(counters.sent.load(Ordering::SeqCst), 0);
}

/// Waits (at most 10 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let waited = Instant::now();
    while !done() {
        assert!(waited.elapsed() < Duration::from_secs(10), "{what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Receives `n` messages and returns their sequence numbers.
async fn sequences(pull: &mut PullSocket, n: usize) -> Vec<u64> {
    let mut seen = Vec::new();
    for _ in 0..n {
        let message = tokio::time::timeout(Duration::from_secs(5), pull.recv())
            .await
            .unwrap()
            .unwrap();
        seen.push(u64::from_be_bytes(
            message.get(1).unwrap()[..].try_into().unwrap(),
        ));
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_events_leaves_as_one_batch() {
    let (mut pull, endpoint) = pull().await;
    let relay = Relay::start(&endpoint, "t", 100).unwrap();
    until("no connection", || {
        relay.counters.connected.load(Ordering::SeqCst)
    })
    .await;
    // Over 5 ms, with the sender free to run on the other thread the whole time.
    for i in 0..50u8 {
        relay.publish(vec![i]);
        std::thread::sleep(Duration::from_micros(100));
    }
    assert_eq!(sequences(&mut pull, 50).await, (0..50).collect::<Vec<_>>());
    // The burst is shorter than a HOLD (20 ms): one batch, or two when it straddles the end
    // of one or this machine stalled it. Sent as they come, it would be many more.
    let batches = relay.counters.batches.load(Ordering::SeqCst);
    assert!((1..=2).contains(&batches), "{batches} batches");
    let counts = relay.close(Duration::from_millis(250)).await;
    assert_eq!(
        (counts.sent, counts.dropped, counts.unconfirmed),
        (50, 0, 0)
    );
}

#[tokio::test]
async fn an_idle_sender_is_woken_by_the_next_event() {
    let (mut pull, endpoint) = pull().await;
    let relay = Relay::start(&endpoint, "t", 100).unwrap();
    relay.publish(b"first".to_vec());
    assert_eq!(sequences(&mut pull, 1).await, [0]);
    // A HOLD with nothing to send, and the sender sleeps until an event wakes it.
    until("the sender never went idle", || {
        !relay.counters.watching.load(Ordering::SeqCst)
    })
    .await;
    relay.publish(b"second".to_vec());
    assert_eq!(sequences(&mut pull, 1).await, [1]);
    assert_eq!(relay.counters.batches.load(Ordering::SeqCst), 2);
    let counts = relay.close(Duration::from_millis(250)).await;
    assert_eq!((counts.sent, counts.dropped, counts.unconfirmed), (2, 0, 0));
}

#[tokio::test]
async fn closing_sends_what_is_held_without_waiting_for_the_hold() {
    let (mut pull, endpoint) = pull().await;
    // Close the relay while the event is held: the close ends the hold. A close that waited
    // for the hold takes a HOLD every time; three tries leave room for a stalled machine.
    let mut closes = Vec::new();
    for attempt in 0..3u64 {
        let relay = Relay::start(&endpoint, "t", 100).unwrap();
        until("no connection", || {
            relay.counters.connected.load(Ordering::SeqCst)
        })
        .await;
        relay.publish(b"held".to_vec());
        let closing = Instant::now();
        let counts = relay.close(Duration::from_secs(5)).await;
        closes.push(closing.elapsed());
        assert_eq!((counts.sent, counts.dropped, counts.unconfirmed), (1, 0, 0));
        let message = tokio::time::timeout(Duration::from_secs(5), pull.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            message.get(2).unwrap()[..],
            b"held"[..],
            "attempt {attempt}"
        );
    }
    assert!(closes.iter().any(|took| *took < HOLD), "{closes:?}");
}

#[tokio::test]
async fn a_run_shorter_than_the_handshake_still_delivers_to_a_listening_peer() {
    let (mut pull, endpoint) = pull().await;
    let relay = Relay::start(&endpoint, "t", 100).unwrap();
    // Published and closed before the sender task has even run (this runtime has one
    // thread and nothing here yields): the connection is not made yet. A close that let
    // only a connected sender finish dropped all three.
    for i in 0..3u8 {
        relay.publish(vec![i]);
    }
    let counts = relay.close(Duration::from_secs(5)).await;
    assert_eq!(
        counts,
        RelayCounts {
            sent: 3,
            dropped: 0,
            unconfirmed: 0
        }
    );
    assert_eq!(sequences(&mut pull, 3).await, [0, 1, 2]);
}

#[tokio::test]
async fn a_refused_connect_ends_its_attempt_at_once() {
    let endpoint = nobody_listening();
    let relay = Relay::start(&endpoint, "t", 100).unwrap();
    relay.publish(vec![1]);
    // The close waits for the first attempt, which a refused connect ends at once. Retried
    // inside zmq.rs, the attempt would last its whole connect timeout (300 ms), past this
    // linger, and the sender would never have come to rest.
    let counts = relay.close(Duration::from_millis(250)).await;
    assert_ne!(
        relay.counters.resting_until.load(Ordering::SeqCst),
        0,
        "the attempt was still under way when the linger ran out"
    );
    assert_eq!(
        counts,
        RelayCounts {
            sent: 0,
            dropped: 1,
            unconfirmed: 0
        }
    );
}
