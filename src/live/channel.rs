//! Answering the controller: each line read after the prompt becomes one `control_ack`, in
//! order. What a command asks is done before its answer is written (an `ok` means it is
//! queued or stopping), except a decision, which is sent right after its answer, so the
//! answer comes before what it causes.

use std::sync::Arc;

use super::approval::Decision;
use super::command::{Command, NotACommand};
use super::lines::Next;
use super::{Phase, Shared};
use crate::control::AbortReason;
use crate::events::{ControlAbort, ControlAck, Event};
use crate::sync::LockExt;

/// Answers the controller's lines on a thread of its own until they end.
pub(super) fn listen(shared: Arc<Shared>) {
    let listener = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            let shared = listener;
            let Some(lines) = shared.commands.clone() else {
                return;
            };
            while let Next::Line(line) = lines.next(None) {
                let parsed = match line.problem() {
                    Some(error) => Some(Err(NotACommand {
                        command: None,
                        id: None,
                        error,
                    })),
                    None => match &line {
                        super::Line::Text(text) => Command::parse(text),
                        _ => None,
                    },
                };
                match parsed {
                    None => {}
                    Some(Ok(command)) => handle(&shared, command),
                    Some(Err(not)) => shared.emit(&Event::ControlAck(&ControlAck {
                        command: not.command,
                        id: not.id,
                        ok: false,
                        error: Some(not.error),
                    })),
                }
            }
        });
    if let Err(err) = spawned {
        shared
            .warnings
            .lock_or_recover()
            .push(format!("cannot read control commands: {err}"));
    }
}

/// Does what `command` asks and answers it. The stream cannot close meanwhile: a command is
/// handled and answered whole, or (after the closing lines) not at all.
pub(super) fn handle(shared: &Shared, command: Command) {
    let _answering = shared.answering.lock_or_recover();
    let name = command.name().to_string();
    let id = command.id().map(str::to_string);
    let answer = |result: Result<(), String>| {
        shared.emit(&Event::ControlAck(&ControlAck {
            command: Some(name.clone()),
            id: id.clone(),
            ok: result.is_ok(),
            error: result.err(),
        }));
    };
    let phase = match shared.phase() {
        Phase::Running if shared.control.is_aborted() => Phase::Stopping,
        phase => phase,
    };
    match command {
        Command::Abort { reason, .. } => {
            if phase == Phase::Ended {
                return answer(Err("the run has ended".to_string()));
            }
            answer(Ok(()));
            if shared.control.is_aborted() {
                // A second stop while the first winds down: end now.
                shared.control.hurry();
                return;
            }
            // Stopped before it is said: a signal sent on seeing `control_abort` is the second
            // stop, never the first. The loop's closing lines wait for this command to be
            // handled whole (`run_ending` takes the same lock), so they still come after it.
            shared.advance(Phase::Stopping);
            shared
                .control
                .abort_with_note(AbortReason::Command, reason.clone());
            shared.emit(&Event::ControlAbort(&ControlAbort { reason }));
        }
        _ if phase == Phase::Ended => answer(Err("the run has ended".to_string())),
        _ if phase == Phase::Stopping => answer(Err("the run is stopping".to_string())),
        Command::Prompt { .. } => answer(Err(
            "the run already has its prompt: send steer or follow_up".to_string(),
        )),
        Command::Steer { message, .. } => {
            shared.inbox.lock_or_recover().steering.push(message);
            answer(Ok(()));
        }
        Command::FollowUp { message, .. } => {
            shared.inbox.lock_or_recover().follow_ups.push_back(message);
            answer(Ok(()));
        }
        // Answered before the decision goes: the answer comes before the `approval_resolved`
        // it causes, and before the run can end because of it.
        Command::Decide {
            id: approval,
            allow,
            reason,
        } => match shared.approvals.take(&approval) {
            Ok(decider) => {
                answer(Ok(()));
                decider.send(Decision { allow, reason });
            }
            Err(err) => answer(Err(err.to_string())),
        },
    }
}
