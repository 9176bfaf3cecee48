use super::*;

fn ctx(trajectory: &str, parent: Option<&str>) -> Value {
    let mut c =
        json!({"session_type_id": "worker", "session_id": "S", "trajectory_id": trajectory});
    if let Some(p) = parent {
        c["parent_trajectory_id"] = json!(p);
    }
    c
}

#[test]
fn requests_and_tools_become_slices_on_their_trajectory_tracks() {
    let lines = [
        json!({"timestamp": 1, "event": {"schema": AGENT_SCHEMA, "event_type": "request_end", "event_time_unix_ms": 1030, "event_source": "dynamo", "agent_context": ctx("root", None), "request": {"request_id": "r", "model": "/models/tiny", "request_received_ms": 1000, "total_time_ms": 30.0}}}),
        json!({"timestamp": 2, "event": {"schema": AGENT_SCHEMA, "event_type": "tool_start", "event_time_unix_ms": 1040, "event_source": "harness", "agent_context": ctx("root", None), "tool": {"tool_call_id": "c1", "tool_class": "bash", "started_at_unix_ms": 1040, "status": "running"}}}),
        json!({"timestamp": 3, "event": {"schema": AGENT_SCHEMA, "event_type": "tool_end", "event_time_unix_ms": 1050, "event_source": "harness", "agent_context": ctx("root", None), "tool": {"tool_call_id": "c1", "tool_class": "bash", "started_at_unix_ms": 1040, "ended_at_unix_ms": 1050, "status": "succeeded", "duration_ms": 10.0}}}),
        json!({"timestamp": 4, "event": {"schema": AGENT_SCHEMA, "event_type": "tool_start", "event_time_unix_ms": 1060, "event_source": "harness", "agent_context": ctx("child", Some("root")), "tool": {"tool_call_id": "c2", "tool_class": "read", "started_at_unix_ms": 1060, "status": "running"}}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect::<String>() + "not json\n";
    let (trace, summary) = convert(&text);
    assert_eq!(
        summary,
        Summary {
            slices: 3,
            sessions: 1,
            trajectories: 2,
            skipped_lines: 1,
            flows: 0,
        }
    );
    let events = trace["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["root", "child (parent root)"]);
    let slices: Vec<(&str, f64, f64, u64)> = events
        .iter()
        .filter(|e| e["ph"] != "M")
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap_or(-1.0),
                e["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        slices,
        [
            ("llm tiny", 1_000_000.0, 30_000.0, 1),
            ("bash", 1_040_000.0, 10_000.0, 1),
            ("read (no end record)", 1_060_000.0, -1.0, 2)
        ]
    );
}

#[test]
fn flows_join_a_tool_to_the_request_that_asked_and_the_one_that_answered() {
    let request = |id: &str, start: u64| {
        json!({"event": {"schema": AGENT_SCHEMA, "event_type": "request_end", "event_time_unix_ms": start + 20,
                   "agent_context": ctx("root", None),
                   "request": {"request_id": id, "x_request_id": id, "model": "m", "request_received_ms": start, "total_time_ms": 20.0}}})
    };
    let tool = json!({"event": {"schema": AGENT_SCHEMA, "event_type": "tool_end", "event_time_unix_ms": 1040,
                          "agent_context": ctx("root", None),
                          "tool": {"tool_call_id": "c1", "tool_class": "bash", "started_at_unix_ms": 1025, "duration_ms": 15.0,
                                   "source_request_id": "s:r0:t0:a1", "consumer_request_id": "s:r0:t1:a1"}}});
    // A tool whose requests are not in the trace gets no arrow.
    let stray = json!({"event": {"schema": AGENT_SCHEMA, "event_type": "tool_end", "event_time_unix_ms": 1100,
                           "agent_context": ctx("root", None),
                           "tool": {"tool_call_id": "c9", "tool_class": "ls", "started_at_unix_ms": 1090, "duration_ms": 1.0,
                                    "source_request_id": "elsewhere"}}});
    let text = [
        request("s:r0:t0:a1", 1000),
        tool,
        request("s:r0:t1:a1", 1045),
        stray,
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect::<String>();
    let (trace, summary) = convert(&text);
    assert_eq!(summary.flows, 2);
    let arrows: Vec<(String, &str, f64)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "join")
        .map(|e| {
            (
                format!("{}{}", e["ph"].as_str().unwrap(), e["id"]),
                e["name"].as_str().unwrap(),
                e["ts"].as_f64().unwrap() / 1000.0,
            )
        })
        .collect();
    // Out of the first request's end into the tool's start; out of the tool's end into
    // the second request's start.
    assert_eq!(
        arrows,
        [
            ("s1".to_string(), "asked", 1019.999),
            ("f1".to_string(), "asked", 1025.0),
            ("s2".to_string(), "answered", 1039.999),
            ("f2".to_string(), "answered", 1045.0),
        ]
    );
}

#[test]
fn request_trace_rows_are_grouped_by_session_id() {
    let row = json!({"timestamp": 5, "event": {"schema": REQUEST_SCHEMA, "event_type": "request_end", "event_time_unix_ms": 2005, "event_source": "dynamo", "agent_context": {"session_id": "traj-a", "parent_session_id": "traj-0"}, "request": {"request_id": "x", "model": "m", "request_received_ms": 2000, "total_time_ms": 5.0}}});
    let (trace, summary) = convert(&format!("{row}\n"));
    assert_eq!(summary.trajectories, 1);
    let thread = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "thread_name")
        .unwrap();
    assert_eq!(thread["args"]["name"], "traj-a (parent traj-0)");
}
