//! `--heartbeat`: a line when the stream has been quiet that long, so an orchestrator can tell
//! a stuck run from one busy in a long tool call or a slow first token. A busy stream gets
//! none: the ticker sleeps until the silence would reach the interval, and checks again.

use std::sync::Arc;
use std::time::Duration;

use super::Shared;
use crate::events::{Emitter, Event, Heartbeat};

/// Starts the ticker; it stops when the run's loop is over.
pub(super) fn start(shared: Arc<Shared>, stream: Emitter, every: Duration) {
    tokio::spawn(async move {
        loop {
            let quiet = stream.quiet_for();
            let wait = if quiet >= every {
                shared.emit(&Event::Heartbeat(&Heartbeat {
                    elapsed_ms: shared.started.elapsed().as_millis() as u64,
                    quiet_ms: quiet.as_millis() as u64,
                }));
                every
            } else {
                every - quiet
            };
            tokio::select! {
                () = shared.done.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    });
}
