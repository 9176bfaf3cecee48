//! The extension lifecycle seen from a run: `prepare` runs concurrently with the rest of
//! startup, the first turn waits for it, and a stopped run does not wait for it; at the end,
//! the extensions' `finish` runs concurrently too, and their lines keep the extensions' order.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use worker::extension::Extension;

/// What the extensions saw, with when they saw it.
#[derive(Default)]
struct Timeline(Mutex<Vec<(String, Instant)>>);

impl Timeline {
    fn mark(&self, what: impl Into<String>) {
        self.0.lock().unwrap().push((what.into(), Instant::now()));
    }

    fn at(&self, what: &str) -> Instant {
        let marks = self.0.lock().unwrap();
        marks
            .iter()
            .find(|(seen, _)| seen == what)
            .unwrap_or_else(|| {
                panic!(
                    "no {what} in {:?}",
                    marks.iter().map(|m| &m.0).collect::<Vec<_>>()
                )
            })
            .1
    }
}

/// Prepares for `for_ms` (forever when `None`), and notes the first turn.
struct Preparing {
    name: &'static str,
    for_ms: Option<u64>,
    timeline: Arc<Timeline>,
}

impl Extension for Preparing {
    fn prepare(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.timeline.mark(format!("{} start", self.name));
            match self.for_ms {
                Some(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
                None => std::future::pending::<()>().await,
            }
            self.timeline.mark(format!("{} end", self.name));
        })
    }

    fn turn_started(&self, turn: u32) {
        self.timeline.mark(format!("{} turn {turn}", self.name));
    }
}

/// Finishes in `for_ms`, with a warning naming it.
struct Closing {
    name: &'static str,
    for_ms: u64,
    timeline: Arc<Timeline>,
}

impl Extension for Closing {
    fn finish(&self, _outcome: worker::extension::RunOutcome<'_>) -> worker::extension::Finish<'_> {
        Box::pin(async move {
            self.timeline.mark(format!("{} start", self.name));
            tokio::time::sleep(Duration::from_millis(self.for_ms)).await;
            self.timeline.mark(format!("{} end", self.name));
            vec![worker::extension::StatusLine::Warning(format!(
                "{} closed",
                self.name
            ))]
        })
    }
}

fn replay_config(dir: &std::path::Path) -> worker::RunConfig {
    let fixture_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/quickstart/model.jsonl");
    let fixture = worker::llm::fixture::Fixture::load(&fixture_path).unwrap();
    worker::RunConfig::new(
        dir.to_path_buf(),
        worker::config::ModelSource::Replay {
            path: fixture_path,
            fixture: fixture.into(),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preparations_run_together_and_the_first_turn_waits_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let mut config = replay_config(dir.path());
    for (name, ms) in [("a", 400), ("b", 600)] {
        config.extensions.push(Arc::new(Preparing {
            name,
            for_ms: Some(ms),
            timeline: timeline.clone(),
        }));
    }
    let sink = worker::CollectorSink::default();
    let result = worker::run(config, "q".into(), Box::new(sink)).await;
    assert_eq!(result.exit, worker::ExitStatus::Ok);
    // Together: b started before a finished, so startup took the longer one, not the sum.
    assert!(timeline.at("b start") < timeline.at("a end"));
    assert!(timeline.at("a start") < timeline.at("b end"));
    // The first turn began only once both were ready.
    let first_turn = timeline.at("a turn 0");
    assert!(first_turn >= timeline.at("a end"));
    assert!(first_turn >= timeline.at("b end"));
}

/// The end waits for the longest closing, not the sum (the session-final request, the
/// tee's last batch, the telemetry export and the MCP servers' exits all take their time),
/// and the lines come in the extensions' order even when a later one finishes first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closings_run_together_and_their_lines_keep_the_extensions_order() {
    let dir = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let mut config = replay_config(dir.path());
    for (name, for_ms) in [("slow", 600), ("quick", 300)] {
        config.extensions.push(Arc::new(Closing {
            name,
            for_ms,
            timeline: timeline.clone(),
        }));
    }
    let sink = worker::CollectorSink::default();
    let result = worker::run(config, "q".into(), Box::new(sink.clone())).await;
    assert_eq!(result.exit, worker::ExitStatus::Ok);
    // Together: the quick one started before the slow one ended.
    assert!(timeline.at("quick start") < timeline.at("slow end"));
    assert!(timeline.at("quick end") < timeline.at("slow end"));
    assert_eq!(result.warnings, ["slow closed", "quick closed"]);
    let last: serde_json::Value = serde_json::from_str(sink.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "usage_snapshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_while_preparing_ends_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let mut config = replay_config(dir.path());
    config.limits.timeout = Some(Duration::from_millis(500));
    config.extensions.push(Arc::new(Preparing {
        name: "stuck",
        for_ms: None,
        timeline: timeline.clone(),
    }));
    let started = Instant::now();
    let sink = worker::CollectorSink::default();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        worker::run(config, "q".into(), Box::new(sink.clone())),
    )
    .await
    .expect("the run waited for a preparation that never ends");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited {:?} for a preparation that never ends",
        started.elapsed()
    );
    assert_eq!(result.exit, worker::ExitStatus::Limit);
    assert!(
        timeline
            .0
            .lock()
            .unwrap()
            .iter()
            .all(|(what, _)| what == "stuck start")
    );
    let last: serde_json::Value = serde_json::from_str(sink.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "usage_snapshot");
}

/// Stops the run (as SIGINT would) the first time the run reaches `point`, and notes the
/// turns that started.
struct StopAt {
    point: &'static str,
    control: worker::RunControl,
    turns: Mutex<Vec<u32>>,
}

impl StopAt {
    fn stop_if(&self, here: &str) {
        if here == self.point {
            self.control.abort(worker::AbortReason::Interrupt);
        }
    }
}

impl Extension for StopAt {
    fn turn_started(&self, turn: u32) {
        self.turns.lock().unwrap().push(turn);
        self.stop_if(&format!("turn {turn} start"));
    }

    fn turn_ended(&self, turn: u32) {
        self.stop_if(&format!("turn {turn} end"));
    }

    fn tool_started(&self, call: &worker::events::ToolCall) {
        self.stop_if(&format!("tool {}", call.name));
    }
}

/// A stop at each safe point of the 3-turn quickstart (its request in flight, between a turn
/// and its tools, a tool running) ends the run there: `aborted`, exit 130, the stream closed
/// with `agent_end` and `usage_snapshot`, and no later turn started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_at_each_safe_point_ends_the_run_there() {
    for (point, turns) in [
        ("turn 0 start", vec![0]),
        ("turn 0 end", vec![0]),
        ("tool ls", vec![0]),
        ("turn 1 start", vec![0, 1]),
        ("turn 1 end", vec![0, 1]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = replay_config(dir.path());
        let stop = Arc::new(StopAt {
            point,
            control: config.control.clone(),
            turns: Mutex::default(),
        });
        config.extensions.push(stop.clone());
        let sink = worker::CollectorSink::default();
        let result = tokio::time::timeout(
            Duration::from_secs(20),
            worker::run(config, "q".into(), Box::new(sink.clone())),
        )
        .await
        .expect("a stopped run ends");
        assert_eq!(result.exit, worker::ExitStatus::Interrupted, "{point}");
        assert_eq!(*stop.turns.lock().unwrap(), turns, "{point}");
        let lines: Vec<serde_json::Value> = sink
            .lines()
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let end = lines
            .iter()
            .rev()
            .find(|l| l["type"] == "agent_end")
            .unwrap();
        assert_eq!(end["stopReason"], "aborted", "{point}");
        assert_eq!(lines.last().unwrap()["type"], "usage_snapshot", "{point}");
    }
}
