//! The attack suite: one module per class of attack a hostile prompt, repository, web page or
//! environment can try, each through the binary, each showing the attack fails with the exact
//! tool error, event or exit code, and that nothing changed outside (files, modes, times,
//! sockets, processes). `SECURITY.md` lists the guarantees these pin.

mod budget;
mod egress;
mod files;
mod host;
mod inputs;
mod processes;
mod secrets;
mod sessions;
mod ssrf;
mod validation;
