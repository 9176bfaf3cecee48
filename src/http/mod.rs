//! One HTTP setup for every caller: the model client, model discovery, the web providers and
//! fetcher, GitHub and the OTLP exporters.
//!
//! - TLS is rustls with the ring provider, installed once for the process ([`install_tls`]);
//!   nothing links OpenSSL.
//! - Every reqwest client starts from [`client_builder`]: worker's user agent, no Nagle delay.
//! - What is worth another try, and how long to wait first, is decided in [`retry`]: one
//!   transient rule ([`transient_status`]), one reading of `Retry-After`, one backoff
//!   ([`RetryPolicy`]). The callers differ only in what they do while they wait (the model
//!   loop reports its retries as events).
//! - An error is shown with its causes on one line ([`error_chain`]).
//!
//! GitHub goes through octocrab (its routes, App JWTs and pagination), which brings its own
//! hyper client; it shares the TLS provider, the transient rule and the backoff from here.

mod retry;

use std::sync::Once;
use std::time::Duration;

pub use retry::{RetryPolicy, parse_retry_after, retry_after, server_seconds, transient_status};

/// The `user-agent` of every request worker makes on its own behalf.
pub const USER_AGENT: &str = concat!("worker/", env!("CARGO_PKG_VERSION"));

/// Makes rustls's ring provider the process default (reqwest, octocrab and the OTLP client
/// need one). Safe to call any number of times, from any thread.
pub fn install_tls() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Another provider already installed (a host program's) is kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder with worker's defaults; callers add their timeouts and policies.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_tls();
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .user_agent(USER_AGENT)
}

/// The client of the model server and the web search providers, with pooled connections.
///
/// `tls: false` is for `http://` endpoints (a local Dynamo): the system's CA certificates are
/// then not loaded, which saves several milliseconds of startup; such a client cannot verify
/// any TLS server and so cannot talk to one.
pub fn client(connect_timeout: Duration, tls: bool) -> Result<reqwest::Client, reqwest::Error> {
    let mut builder = client_builder();
    if !tls {
        builder = builder.tls_certs_only(std::iter::empty());
    }
    builder
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
}

/// An error and its causes on one line: reqwest's top-level message alone says little.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
