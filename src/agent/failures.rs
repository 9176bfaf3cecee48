//! `--max-repeated-failures`: a model that calls the same tool with the same arguments and
//! fails again and again is stuck, and each try costs a turn. A call is the tool's name and
//! its arguments (object keys in any order); its count grows with each failure and starts
//! over when that same call succeeds.

use serde_json::Value;

use crate::events::ToolCall;

/// Failures in a row, per call.
#[derive(Debug, Default)]
pub(super) struct RepeatedFailures {
    calls: Vec<(String, Value, u32)>,
}

impl RepeatedFailures {
    /// Counts one result of `call`.
    pub(super) fn record(&mut self, call: &ToolCall, failed: bool) {
        let arguments = call.arguments();
        let at = self
            .calls
            .iter()
            .position(|(name, seen, _)| *name == call.name && *seen == arguments);
        match (at, failed) {
            (Some(at), true) => self.calls[at].2 += 1,
            (Some(at), false) => {
                self.calls.swap_remove(at);
            }
            (None, true) => self.calls.push((call.name.clone(), arguments, 1)),
            (None, false) => {}
        }
    }

    /// The tool of a call that has failed `max` times, and how often.
    pub(super) fn reached(&self, max: u32) -> Option<(&str, u32)> {
        self.calls
            .iter()
            .find(|(_, _, failures)| *failures >= max)
            .map(|(name, _, failures)| (name.as_str(), *failures))
    }
}

#[cfg(test)]
mod tests;
