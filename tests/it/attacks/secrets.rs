//! (attacks: secrets)
