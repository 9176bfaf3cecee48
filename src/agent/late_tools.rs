//! Tools that arrive while the run goes on: what extensions offer beyond the tools fixed at
//! the start (an MCP server ready late, one that changed its list or died), taken before each
//! model request, and what the run needs that an extension says is gone.
//!
//! The run's tools are its own (built-in and fixed extension tools, narrowed by `--tools`)
//! followed by each extension's latest late set; a late tool never replaces one of the run's
//! own by name. The system prompt is not rebuilt (so a server's cache of the conversation's
//! prefix stays warm): late tools are described by their schemas alone.

use super::step::Plan;
use super::*;

impl Session {
    /// Before a model request: takes the extensions' late tools, if any changed, into the
    /// tools offered from this request on (and to the children started from now on).
    pub(super) async fn refresh_tools(&mut self, plan: &mut Plan<'_>) {
        let mut changed = false;
        for (index, extension) in self.config.extensions.iter().enumerate() {
            if let Some(tools) = extension.changed_tools().await {
                if let Some(slot) = self.late_tools.get_mut(index) {
                    *slot = tools;
                }
                changed = true;
            }
        }
        if !changed {
            return;
        }
        self.tools = self
            .own_tools
            .with_late(self.late_tools.iter().flatten().cloned());
        plan.tools = conversation::definitions(&self.tools);
        self.children.offer(&self.tools);
    }

    /// What the run requires and an extension says is gone, as the fatal error that ends it.
    pub(super) fn broken(&self) -> Option<FatalError> {
        self.config
            .extensions
            .iter()
            .find_map(|extension| extension.broken())
            .map(|message| FatalError {
                kind: FatalErrorKind::Dependency,
                message,
            })
    }
}
