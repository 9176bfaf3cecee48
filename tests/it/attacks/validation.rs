//! (attacks: validation)
