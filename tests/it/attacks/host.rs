//! (attacks: host)
