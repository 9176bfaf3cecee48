use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::events::CollectorSink;

struct Harness {
    live: Live,
    sink: CollectorSink,
    control: RunControl,
    writer: Option<std::io::PipeWriter>,
}

fn settings() -> LiveSettings {
    LiveSettings {
        approve_tools: Vec::new(),
        approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
        pre_tool_hooks: Vec::new(),
        post_tool_hooks: Vec::new(),
        hook_timeout: DEFAULT_HOOK_TIMEOUT,
        heartbeat: None,
    }
}

/// Live control without a controller (no `--control`).
fn without_controller(settings: LiveSettings) -> Result<Live, LiveError> {
    Live::new(settings, None, RunControl::new(), "s", std::env::temp_dir())
}

fn harness(settings: LiveSettings) -> Harness {
    let (reader, writer) = std::io::pipe().unwrap();
    let lines = CommandLines::spawn(std::io::BufReader::new(reader)).unwrap();
    let control = RunControl::new();
    let live = Live::new(
        settings,
        Some(lines),
        control.clone(),
        "s-1",
        std::env::temp_dir(),
    )
    .unwrap();
    let sink = CollectorSink::default();
    live.attach(&Emitter::new(Box::new(sink.clone()), "s-1", false));
    Harness {
        live,
        sink,
        control,
        writer: Some(writer),
    }
}

impl Harness {
    fn send(&mut self, line: &str) {
        let writer = self.writer.as_mut().unwrap();
        writeln!(writer, "{line}").unwrap();
    }

    /// The lines of `kind`, once there are `count` of them.
    fn wait_for(&self, kind: &str, count: usize) -> Vec<Value> {
        for _ in 0..500 {
            let found: Vec<Value> = self
                .sink
                .lines()
                .iter()
                .map(|line| serde_json::from_str::<Value>(line).unwrap())
                .filter(|line| line["type"] == kind)
                .collect();
            if found.len() >= count {
                return found;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no {count} {kind} lines in {:?}", self.sink.lines());
    }
}

fn call(name: &str) -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: name.into(),
        raw_arguments: json!({"command": "git push"}).to_string(),
        arguments_error: None,
    }
}

fn ack(value: &Value) -> (Value, Value, Value, Value) {
    (
        value["command"].clone(),
        value["id"].clone(),
        value["ok"].clone(),
        value["error"].clone(),
    )
}

#[test]
fn every_line_gets_one_answer_in_order_and_messages_queue() {
    let mut h = harness(settings());
    h.send(r#"{"type":"steer","message":"look at the tests first","id":"s1"}"#);
    h.send("");
    h.send("not json");
    h.send(r#"{"type":"follow_up","message":"then update the docs"}"#);
    h.send(r#"{"type":"prompt","message":"again"}"#);
    h.send(r#"{"type":"decide","id":"approval-7","allow":true}"#);
    let acks = h.wait_for("control_ack", 5);
    assert_eq!(
        ack(&acks[0]),
        (json!("steer"), json!("s1"), json!(true), Value::Null)
    );
    assert_eq!(acks[1]["ok"], false);
    assert!(acks[1]["error"].as_str().unwrap().starts_with("not JSON"));
    assert_eq!(ack(&acks[2]).2, json!(true));
    assert_eq!(
        acks[3]["error"],
        "the run already has its prompt: send steer or follow_up"
    );
    assert_eq!(
        ack(&acks[4]),
        (
            json!("decide"),
            json!("approval-7"),
            json!(false),
            json!("no approval \"approval-7\" was requested")
        )
    );
    assert!(h.live.steering_waiting());
    assert_eq!(h.live.take_steering(), vec!["look at the tests first"]);
    assert!(!h.live.steering_waiting());
    assert_eq!(
        h.live.take_follow_up().as_deref(),
        Some("then update the docs")
    );
    assert_eq!(h.live.take_follow_up(), None);
}

#[test]
fn an_abort_stops_the_run_once_and_a_second_one_hurries_it() {
    let mut h = harness(settings());
    h.send(r#"{"type":"abort","reason":"over budget","id":"a1"}"#);
    let aborts = h.wait_for("control_abort", 1);
    assert_eq!(aborts[0]["reason"], "over budget");
    assert_eq!(h.control.reason(), Some(AbortReason::Command));
    assert_eq!(h.control.note(), Some("over budget"));
    h.send(r#"{"type":"steer","message":"too late"}"#);
    h.send(r#"{"type":"abort"}"#);
    let acks = h.wait_for("control_ack", 3);
    assert_eq!(ack(&acks[0]).2, json!(true));
    assert_eq!(acks[1]["error"], "the run is stopping");
    assert_eq!(ack(&acks[2]).2, json!(true));
    let hurried = h.control.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), hurried.hurried())
            .await
            .expect("a second abort hurries the run");
    });
    assert_eq!(h.wait_for("control_abort", 1).len(), 1);
}

#[test]
fn after_the_loop_ends_commands_are_refused_and_after_finish_unanswered() {
    let mut h = harness(settings());
    h.live.run_ending();
    h.send(r#"{"type":"steer","message":"x"}"#);
    h.send(r#"{"type":"abort"}"#);
    let acks = h.wait_for("control_ack", 2);
    assert_eq!(acks[0]["error"], "the run has ended");
    assert_eq!(acks[1]["error"], "the run has ended");
    assert!(!h.control.is_aborted());
}

use crate::control::AbortReason;

#[tokio::test]
async fn a_listed_tool_waits_for_its_decision() {
    let mut h = harness(LiveSettings {
        approve_tools: vec!["bash".into(), "github_*".into()],
        ..settings()
    });
    let call = call("github_create_issue");
    let mut writer = h.writer.take().unwrap();
    let admitted = h.live.admit(&call, call.arguments());
    let decide = async {
        let requested = tokio::task::spawn_blocking({
            let sink = h.sink.clone();
            move || {
                for _ in 0..500 {
                    if let Some(line) = sink
                        .lines()
                        .iter()
                        .find(|l| l.contains("approval_requested"))
                    {
                        return serde_json::from_str::<Value>(line).unwrap();
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                panic!("no approval_requested");
            }
        })
        .await
        .unwrap();
        assert_eq!(requested["toolCallId"], "call_1");
        assert_eq!(requested["toolName"], "github_create_issue");
        assert_eq!(requested["input"], json!({"command": "git push"}));
        assert_eq!(requested["timeoutMs"], 60_000);
        let id = requested["id"].as_str().unwrap().to_string();
        writeln!(
            writer,
            r#"{{"type":"decide","id":"{id}","allow":false,"reason":"no pushes today"}}"#
        )
        .unwrap();
    };
    let (admission, ()) = tokio::join!(admitted, decide);
    assert_eq!(
        admission,
        Admission::Refuse("The github_create_issue call was denied: no pushes today".to_string())
    );
    let resolved = h.wait_for("approval_resolved", 1);
    assert_eq!(resolved[0]["allow"], false);
    assert_eq!(resolved[0]["by"], "control");
    assert_eq!(resolved[0]["reason"], "no pushes today");
    // A tool not listed runs without asking.
    let read = self::call("read");
    assert_eq!(
        h.live.admit(&read, json!({"path": "a"})).await,
        Admission::Run(json!({"path": "a"}))
    );
}

#[tokio::test]
async fn an_approval_without_a_decision_is_denied_at_its_timeout_or_on_abort() {
    let h = harness(LiveSettings {
        approve_tools: vec!["bash".into()],
        approval_timeout: Duration::from_millis(100),
        ..settings()
    });
    let call = call("bash");
    let admission = h.live.admit(&call, call.arguments()).await;
    assert_eq!(
        admission,
        Admission::Refuse("The bash call was denied: no decision came within 100ms".into())
    );
    assert_eq!(h.wait_for("approval_resolved", 1)[0]["by"], "timeout");
    let slow = harness(LiveSettings {
        approve_tools: vec!["bash".into()],
        ..settings()
    });
    let stop = slow.control.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.abort(AbortReason::Terminate);
    });
    let admission = slow.live.admit(&call, call.arguments()).await;
    assert!(matches!(admission, Admission::Refuse(_)), "{admission:?}");
    assert_eq!(slow.wait_for("approval_resolved", 1)[0]["by"], "abort");
}

#[test]
fn approvals_nobody_can_give_are_a_usage_error() {
    let err = without_controller(LiveSettings {
        approve_tools: vec!["bash".into()],
        ..settings()
    })
    .err()
    .unwrap();
    assert!(matches!(err, LiveError::NoDecider), "{err}");
    let zero = without_controller(LiveSettings {
        heartbeat: Some(Duration::ZERO),
        ..settings()
    })
    .err()
    .unwrap();
    assert_eq!(zero.to_string(), "--heartbeat must be longer than 0");
}

#[tokio::test]
async fn a_heartbeat_fills_a_silence_and_only_a_silence() {
    let live = without_controller(LiveSettings {
        heartbeat: Some(Duration::from_millis(100)),
        ..settings()
    })
    .unwrap();
    let sink = CollectorSink::default();
    let stream = Emitter::new(Box::new(sink.clone()), "s", false);
    live.attach(&stream);
    // A busy stream: a line every 20 ms for 300 ms gets no heartbeat.
    for _ in 0..15 {
        stream.emit(&Event::AgentStart);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!sink.lines().iter().any(|l| l.contains("heartbeat")));
    tokio::time::sleep(Duration::from_millis(350)).await;
    let beats: Vec<Value> = sink
        .lines()
        .iter()
        .filter(|l| l.contains("\"heartbeat\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!((2..=4).contains(&beats.len()), "{beats:?}");
    assert!(beats[0]["quietMs"].as_u64().unwrap() >= 100);
    live.run_ending();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let after = sink
        .lines()
        .iter()
        .filter(|l| l.contains("\"heartbeat\""))
        .count();
    assert_eq!(after, beats.len(), "no heartbeat after the loop ends");
}

#[tokio::test]
async fn a_tool_asking_for_itself_gets_the_same_approval_or_a_refusal_without_a_controller() {
    use crate::tools::{Approval, ApprovalRequest};
    let mut h = harness(settings());
    let approver = h.live.approver().unwrap();
    let request = ApprovalRequest {
        tool: "mcp_deploy".into(),
        call_id: "call_9".into(),
        action: "deploy to production".into(),
    };
    let mut writer = h.writer.take().unwrap();
    let sink = h.sink.clone();
    let decide = tokio::task::spawn_blocking(move || {
        for _ in 0..500 {
            if let Some(line) = sink
                .lines()
                .iter()
                .find(|l| l.contains("approval_requested"))
            {
                let requested: Value = serde_json::from_str(line).unwrap();
                assert_eq!(
                    requested["input"],
                    json!({"action": "deploy to production"})
                );
                assert_eq!(requested["toolName"], "mcp_deploy");
                let id = requested["id"].as_str().unwrap();
                writeln!(writer, r#"{{"type":"decide","id":"{id}","allow":true}}"#).unwrap();
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no approval_requested");
    });
    assert_eq!(approver.approve(&request).await, Approval::Granted);
    decide.await.unwrap();

    let quiet = without_controller(LiveSettings {
        heartbeat: Some(Duration::from_secs(60)),
        ..settings()
    })
    .unwrap();
    assert_eq!(
        quiet.approver().unwrap().approve(&request).await,
        Approval::Refused {
            reason: "mcp_deploy needs an approval and this run has no controller to ask (--control stdin)"
                .into()
        }
    );
}
