//! (attacks: ssrf)
