//! (attacks: files)
