//! The collector's credentials, for the run's redactor: whatever the exporter may send in a
//! header or a URL is a secret, whether or not telemetry is on in this run (a command that
//! prints its environment shows the variables either way).

use crate::config::Env;
use crate::secrets::url_password;

/// `key=value,key=value` header lists the exporter reads (values percent-encoded).
const HEADER_VARS: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
];
/// Collector URLs, which may carry a password (`https://user:pass@collector`).
const ENDPOINT_VARS: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// Every header value, as written and as sent (percent-decoded), with the credential alone
/// for an `Authorization`-style value (`Bearer abc…`: `abc…`); and the password of every
/// collector URL, `--otel-endpoint` included.
pub fn credentials(env: &dyn Env, endpoint_flag: Option<&str>) -> Vec<String> {
    let mut found = Vec::new();
    for list in HEADER_VARS.iter().filter_map(|name| env.get(name)) {
        for (_, value) in list.split(',').filter_map(|pair| pair.split_once('=')) {
            let value = value.trim();
            let decoded = percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .into_owned();
            if let Some((_, credential)) = decoded.trim().split_once(char::is_whitespace) {
                found.push(credential.trim().to_string());
            }
            found.push(value.to_string());
            found.push(decoded);
        }
    }
    let endpoints = ENDPOINT_VARS
        .iter()
        .filter_map(|name| env.get(name))
        .chain(endpoint_flag.map(str::to_string));
    found.extend(endpoints.flat_map(|raw| url_password(&raw)));
    found
}
