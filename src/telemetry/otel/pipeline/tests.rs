use super::*;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{Tracer as _, TracerProvider as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::Instant;

/// Records each batch's span names, in the order the batches leave.
#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Vec<String>>>>);

impl Recorder {
    fn batches(&self) -> Vec<Vec<String>> {
        self.0.lock_or_recover().clone()
    }
}

impl SpanExporter for Recorder {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let names = batch.iter().map(|span| span.name.to_string()).collect();
        self.0.lock_or_recover().push(names);
        Ok(())
    }
}

fn batching(max_queue: usize, max_batch: usize, span_delay: Duration) -> Batching {
    Batching {
        span_delay,
        max_queue,
        max_batch,
        metric_interval: Duration::from_secs(3600),
    }
}

fn provider(queue: &SpanQueue<Recorder>) -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_span_processor(queue.clone())
        .build()
}

fn end_spans(provider: &SdkTracerProvider, names: &[&str]) {
    let tracer = provider.tracer("test");
    for name in names {
        drop(tracer.start(name.to_string()));
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(ToString::to_string).collect()
}

/// Polls `done` for up to 5 s.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

#[tokio::test]
async fn spans_leave_in_batches_in_the_order_they_ended() {
    let recorder = Recorder::default();
    let queue = SpanQueue::new(
        recorder.clone(),
        batching(100, 2, Duration::from_secs(3600)),
    );
    let provider = provider(&queue);
    // Before the run starts nothing is sent: full batches wait too.
    end_spans(&provider, &["a", "b", "c", "d", "e"]);
    tokio::task::yield_now().await;
    assert!(recorder.batches().is_empty());
    queue.send_waiting().await;
    assert_eq!(
        recorder.batches(),
        vec![names(&["a", "b"]), names(&["c", "d"]), names(&["e"])]
    );
    queue.send_waiting().await;
    assert_eq!(recorder.batches().len(), 3, "nothing is sent twice");
    assert_eq!(queue.dropped(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_batch_leaves_at_once_and_the_rest_waits_for_the_delay() {
    let recorder = Recorder::default();
    let queue = SpanQueue::new(
        recorder.clone(),
        batching(100, 3, Duration::from_secs(3600)),
    );
    let provider = provider(&queue);
    let periodic = queue.start();
    assert!(periodic.is_some());
    end_spans(&provider, &["a", "b"]);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(recorder.batches().is_empty(), "not a full batch yet");
    // The third fills a batch (what ends before it leaves may go with it).
    end_spans(&provider, &["c", "d"]);
    assert!(eventually(|| !recorder.batches().is_empty()).await);
    assert_eq!(recorder.batches()[0][..3], names(&["a", "b", "c"]));
    queue.send_waiting().await;
    assert_eq!(recorder.batches().concat(), names(&["a", "b", "c", "d"]));
    end_spans(&provider, &["e"]);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !recorder.batches().concat().contains(&"e".to_string()),
        "e waits for the delay or the end"
    );
    queue.send_waiting().await;
    assert_eq!(recorder.batches().last(), Some(&names(&["e"])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_span_waits_at_most_the_schedule_delay() {
    let recorder = Recorder::default();
    let queue = SpanQueue::new(
        recorder.clone(),
        batching(100, 50, Duration::from_millis(20)),
    );
    let provider = provider(&queue);
    let periodic = queue.start();
    end_spans(&provider, &["lonely"]);
    assert!(eventually(|| !recorder.batches().is_empty()).await);
    assert_eq!(recorder.batches(), vec![names(&["lonely"])]);
    if let Some(task) = periodic {
        task.abort();
    }
}

#[tokio::test]
async fn a_full_queue_drops_and_counts_the_spans_it_cannot_hold() {
    let recorder = Recorder::default();
    let queue = SpanQueue::new(recorder.clone(), batching(3, 3, Duration::from_secs(3600)));
    let provider = provider(&queue);
    end_spans(&provider, &["a", "b", "c", "d", "e"]);
    assert_eq!(queue.dropped(), 2);
    queue.send_waiting().await;
    assert_eq!(recorder.batches(), vec![names(&["a", "b", "c"])]);
}

/// Records each export's counter sums.
#[derive(Debug, Clone, Default)]
struct MetricRecorder(Arc<Mutex<Vec<Vec<u64>>>>);

impl PushMetricExporter for MetricRecorder {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
        let mut sums = Vec::new();
        for scope in metrics.scope_metrics() {
            for metric in scope.metrics() {
                if let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() {
                    sums.extend(
                        sum.data_points()
                            .map(opentelemetry_sdk::metrics::data::SumDataPoint::value),
                    );
                }
            }
        }
        self.0.lock_or_recover().push(sums);
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_sent_every_interval_and_when_asked() {
    let recorder = MetricRecorder::default();
    let mut every = batching(10, 10, Duration::from_secs(3600));
    every.metric_interval = Duration::from_millis(20);
    let pipe = MetricPipe::new(recorder.clone(), every);
    let provider = SdkMeterProvider::builder()
        .with_reader(pipe.reader())
        .build();
    let counter = provider.meter("test").u64_counter("calls").build();
    counter.add(2, &[]);
    let periodic = pipe.start();
    assert!(eventually(|| !recorder.0.lock_or_recover().is_empty()).await);
    if let Some(task) = periodic {
        task.abort();
    }
    counter.add(3, &[]);
    assert!(pipe.send().await.is_ok());
    let sent = recorder.0.lock_or_recover().clone();
    assert_eq!(sent.first(), Some(&vec![2]), "{sent:?}");
    assert_eq!(sent.last(), Some(&vec![5]), "cumulative: {sent:?}");
}

#[test]
fn without_a_runtime_nothing_starts_and_spans_wait() {
    let recorder = Recorder::default();
    let queue = SpanQueue::new(recorder.clone(), batching(10, 1, Duration::from_millis(1)));
    assert!(queue.start().is_none());
    let provider = provider(&queue);
    end_spans(&provider, &["a"]);
    std::thread::sleep(Duration::from_millis(20));
    assert!(recorder.batches().is_empty());
}
