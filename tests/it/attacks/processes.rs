//! (attacks: processes)
