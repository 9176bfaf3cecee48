//! Live control from the command line: `--control`, `--approve-tools`, the hooks and
//! `--heartbeat` become one [`crate::live::Live`] extension, when any of them is asked for.

use std::sync::Arc;

use crate::config::RunConfig;

use super::{RunArgs, UsageError};

/// Live control (`--control`, `--approve-tools`, hooks, `--heartbeat`), when any is asked for.
pub(super) fn add_live_control(
    args: &RunArgs,
    commands: Option<crate::live::CommandLines>,
    config: &mut RunConfig,
) -> Result<(), UsageError> {
    let settings = crate::live::LiveSettings {
        approve_tools: args
            .approve_tools
            .iter()
            .flatten()
            .map(|name| name.trim().to_string())
            .filter(|name| !name.is_empty())
            .collect(),
        approval_timeout: args.approval_timeout.0,
        pre_tool_hooks: args.pre_tool_hook.clone(),
        post_tool_hooks: args.post_tool_hook.clone(),
        hook_timeout: args.hook_timeout.0,
        heartbeat: args.heartbeat.map(|every| every.0),
    };
    let wanted = commands.is_some()
        || !settings.approve_tools.is_empty()
        || !settings.pre_tool_hooks.is_empty()
        || !settings.post_tool_hooks.is_empty()
        || settings.heartbeat.is_some();
    if !wanted {
        return Ok(());
    }
    let live = crate::live::Live::new(
        settings,
        commands,
        config.control.clone(),
        config.session_id.as_str(),
        config.cwd.clone(),
    )?;
    config.extensions.push(Arc::new(live));
    Ok(())
}
