//! (attacks: egress)
