//! Pre- and post-tool hook programs (Claude Code's PreToolUse / PostToolUse contract).
