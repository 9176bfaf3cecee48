//! (attacks: budget)
