//! (attacks: inputs)
