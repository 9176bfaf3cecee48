//! (attacks: sessions)
