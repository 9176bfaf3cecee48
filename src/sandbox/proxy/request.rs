//! What a client asks the egress proxy for, read strictly enough that the proxy and the origin
//! server cannot disagree about it.
//!
//! The head is parsed by `httparse` (no obsolete line folding, no whitespace before a colon,
//! no bare CR). A plain-HTTP request is forwarded as exactly one request: its head rebuilt in
//! origin form with `Connection: close` and without hop-by-hop headers, then exactly
//! `Content-Length` bytes of body. A chunked body, two lengths, a `Host` header naming another
//! host than the request-target, or bytes past the body (a second, pipelined request) are
//! refused before anything is sent, so no request can hide inside another.

use url::Host;

/// The most a request head may take.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most header lines a request may have.
const MAX_HEADERS: usize = 128;

/// Headers that concern the connection to the proxy, not the request: never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
    "http2-settings",
];

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host, in WHATWG form (`[v6]` for IPv6).
    pub host: Host<String>,
    /// The port: as written, else 80 for an `http://` URL (a CONNECT always names one).
    pub port: u16,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Why a request is refused before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The head is not complete within [`MAX_HEAD`] bytes.
    #[error("a request head over {} KiB", MAX_HEAD / 1024)]
    HeadTooLarge,
    /// The bytes are not an HTTP/1.x request head.
    #[error("not an HTTP/1.x request ({source})")]
    NotHttp {
        /// What the parser found wrong.
        #[source]
        source: httparse::Error,
    },
    /// A CONNECT whose target is not `HOST:PORT`.
    #[error("CONNECT needs HOST:PORT, not '{target}'")]
    ConnectTarget {
        /// The request-target as sent.
        target: String,
    },
    /// A request-target that is not an absolute URL with a host.
    #[error("a proxy request names its host: CONNECT HOST:PORT or an http:// URL, not '{target}'")]
    NotAbsolute {
        /// The request-target as sent.
        target: String,
    },
    /// A URL of another scheme than `http`.
    #[error("only http:// URLs are forwarded ({scheme}:// goes through a CONNECT tunnel)")]
    Scheme {
        /// The URL's scheme.
        scheme: String,
    },
    /// A URL without a host or a port.
    #[error("'{target}' names no host")]
    NoHost {
        /// The request-target as sent.
        target: String,
    },
    /// Two or more `Host` headers.
    #[error("more than one Host header")]
    HostHeaders,
    /// A `Host` header naming another host or port than the request-target.
    #[error("the Host header names '{value}', not the request's host {target}")]
    HostMismatch {
        /// The header's value, trimmed.
        value: String,
        /// The request-target's host and port.
        target: Target,
    },
    /// A `Transfer-Encoding` header.
    #[error(
        "a request body needs a Content-Length; Transfer-Encoding ({encoding}) is not forwarded"
    )]
    TransferEncoding {
        /// The header's value, trimmed.
        encoding: String,
    },
    /// A `Content-Length` that is not a number.
    #[error("Content-Length '{value}' is not a length")]
    ContentLength {
        /// The header's value.
        value: String,
    },
    /// Two or more `Content-Length` headers.
    #[error("more than one Content-Length header")]
    ContentLengths,
    /// Bytes past the body: a second request on the connection.
    #[error("one request per connection: {extra} more bytes follow the request")]
    Pipelined {
        /// How many bytes follow the body.
        extra: u64,
    },
}

/// A request the proxy may act on.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    /// `CONNECT host:port`: an opaque tunnel; `early` is what the client sent past the head.
    Connect {
        /// Where to open the tunnel.
        target: Target,
        /// Bytes the client sent after the head, passed on once the tunnel is open.
        early: Vec<u8>,
    },
    /// A plain-HTTP request: its head as the origin server gets it, the length of its body,
    /// and the part of the body already read (never more than the body).
    Http {
        /// Where to forward it.
        target: Target,
        /// The head to send: origin form, `Connection: close`, no hop-by-hop headers.
        head: Vec<u8>,
        /// The body's length in bytes (`Content-Length`, 0 without one).
        body_length: u64,
        /// The body bytes read with the head.
        early: Vec<u8>,
    },
}

/// Parses what has been read so far: `Ok(None)` while the head is incomplete, the request
/// once it is, or why it is refused.
pub fn parse(read: &[u8]) -> Result<Option<Request>, RequestError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_length = match request.parse(read) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) if read.len() > MAX_HEAD => {
            return Err(RequestError::HeadTooLarge);
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(source) => return Err(RequestError::NotHttp { source }),
    };
    let early = read[head_length..].to_vec();
    let (method, target) = (
        request.method.unwrap_or_default(),
        request.path.unwrap_or_default(),
    );
    if method.eq_ignore_ascii_case("CONNECT") {
        let target = authority(target).ok_or_else(|| RequestError::ConnectTarget {
            target: target.to_string(),
        })?;
        return Ok(Some(Request::Connect { target, early }));
    }
    let url = url::Url::parse(target)
        .ok()
        .filter(url::Url::has_host)
        .ok_or_else(|| RequestError::NotAbsolute {
            target: target.to_string(),
        })?;
    if url.scheme() != "http" {
        return Err(RequestError::Scheme {
            scheme: url.scheme().to_string(),
        });
    }
    let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
        return Err(RequestError::NoHost {
            target: target.to_string(),
        });
    };
    let target = Target {
        host: host.to_owned(),
        port,
    };
    let headers = request.headers.iter();
    check_host_header(headers.clone(), &target)?;
    let body_length = body_length(headers.clone())?;
    if early.len() as u64 > body_length {
        return Err(RequestError::Pipelined {
            extra: early.len() as u64 - body_length,
        });
    }
    let head = origin_head(method, &url, request.version.unwrap_or(1), headers, &target);
    Ok(Some(Request::Http {
        target,
        head,
        body_length,
        early,
    }))
}

/// `host:port` of a CONNECT, with the host in WHATWG form (`[v6]` for IPv6).
fn authority(text: &str) -> Option<Target> {
    let (host, port) = text.rsplit_once(':')?;
    if !port.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(Target {
        host: Host::parse(host).ok()?,
        port: port.parse().ok().filter(|port| *port > 0)?,
    })
}

fn named<'a, 'h: 'a>(
    headers: impl Iterator<Item = &'a httparse::Header<'h>>,
    name: &'a str,
) -> impl Iterator<Item = &'a [u8]> {
    headers
        .filter(move |header| header.name.eq_ignore_ascii_case(name))
        .map(|header| header.value)
}

/// The `Host` header, when there is one, must name the request-target's host and port.
fn check_host_header<'a, 'h: 'a>(
    headers: impl Iterator<Item = &'a httparse::Header<'h>> + Clone,
    target: &Target,
) -> Result<(), RequestError> {
    let values: Vec<&[u8]> = named(headers, "host").collect();
    let value = match values.as_slice() {
        [] => return Ok(()),
        [one] => String::from_utf8_lossy(one).trim().to_string(),
        _ => return Err(RequestError::HostHeaders),
    };
    let named = (!value.contains(['/', '@', '?', '#', '\\']))
        .then(|| url::Url::parse(&format!("http://{value}/")).ok())
        .flatten()
        .and_then(|url| Some((url.host()?.to_owned(), url.port_or_known_default()?)));
    match named {
        Some((host, port)) if host == target.host && port == target.port => Ok(()),
        _ => Err(RequestError::HostMismatch {
            value,
            target: target.clone(),
        }),
    }
}

/// The body's length: `Content-Length`, once; no `Transfer-Encoding`.
fn body_length<'a, 'h: 'a>(
    headers: impl Iterator<Item = &'a httparse::Header<'h>> + Clone,
) -> Result<u64, RequestError> {
    if let Some(encoding) = named(headers.clone(), "transfer-encoding").next() {
        return Err(RequestError::TransferEncoding {
            encoding: String::from_utf8_lossy(encoding).trim().to_string(),
        });
    }
    let lengths: Vec<&[u8]> = named(headers, "content-length").collect();
    match lengths.as_slice() {
        [] => Ok(0),
        [one] => std::str::from_utf8(one)
            .ok()
            .map(str::trim)
            .filter(|text| !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()))
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| RequestError::ContentLength {
                value: String::from_utf8_lossy(one).into_owned(),
            }),
        _ => Err(RequestError::ContentLengths),
    }
}

/// The head the origin server gets: the request line in origin form, the end-to-end headers,
/// a `Host` header (added for HTTP/1.0 clients that sent none) and `Connection: close`.
fn origin_head<'a, 'h: 'a>(
    method: &str,
    url: &url::Url,
    version: u8,
    headers: impl Iterator<Item = &'a httparse::Header<'h>> + Clone,
    target: &Target,
) -> Vec<u8> {
    // Headers the client's Connection header names are hop-by-hop too, except the two that
    // frame the request: dropping them would change what the server reads as the request.
    let listed: Vec<String> = named(headers.clone(), "connection")
        .flat_map(|value| {
            String::from_utf8_lossy(value)
                .split(',')
                .map(|name| name.trim().to_ascii_lowercase())
                .filter(|name| name != "host" && name != "content-length")
                .collect::<Vec<_>>()
        })
        .collect();
    let mut path = url.path().to_string();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    let mut head = format!("{method} {path} HTTP/1.{version}\r\n").into_bytes();
    let mut has_host = false;
    for header in headers {
        let name = header.name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&name.as_str()) || listed.contains(&name) {
            continue;
        }
        has_host |= name == "host";
        head.extend_from_slice(header.name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(header.value);
        head.extend_from_slice(b"\r\n");
    }
    if !has_host {
        let authority = match url.port() {
            Some(port) => format!("{}:{port}", target.host),
            None => target.host.to_string(),
        };
        head.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head
}
