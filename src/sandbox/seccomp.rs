//! With no network (`--no-network`, `--allow-host`), a command must not reach the host through
//! a Unix socket either: a path socket (docker.sock, an ssh-agent, D-Bus) is reachable from any
//! network namespace, and neither Landlock nor a read-only mount governs `connect` on one.
//!
//! So the command's process gets a seccomp filter before it starts: `socket(AF_UNIX, …)` fails
//! with `EACCES`, and so does `io_uring_setup` (io_uring can open and connect sockets without
//! the `socket` and `connect` system calls). `socketpair(AF_UNIX)` stays allowed: it makes a
//! connected pair inside the process and reaches nothing. System calls of another ABI (32-bit
//! `int 0x80`, x32), whose socket calls the filter cannot read, fail with `ENOSYS`.
//! Abstract Unix sockets live in the network namespace, which is the command's own.

use nix::libc;

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// x32 system calls on x86_64 carry this bit in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Offsets in `struct seccomp_data`: nr, arch, instruction pointer, args.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARG0_LOW: u32 = 16;

const fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The filter program.
fn program() -> Vec<libc::sock_filter> {
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let equals = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let at_least = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    let allow = libc::SECCOMP_RET_ALLOW;
    let refuse = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
    let no_such_call = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    vec![
        // 0: another ABI: nothing of it can be checked.
        stmt(load, OFFSET_ARCH),
        jump(equals, NATIVE_ARCH, 1, 0),
        stmt(ret, no_such_call),
        // 3
        stmt(load, OFFSET_NR),
        jump(at_least, X32_SYSCALL_BIT, 0, 1),
        stmt(ret, no_such_call),
        // 6
        jump(equals, libc::SYS_io_uring_setup as u32, 0, 1),
        stmt(ret, refuse),
        // 8
        jump(equals, libc::SYS_socket as u32, 0, 3),
        stmt(load, OFFSET_ARG0_LOW),
        jump(equals, libc::AF_UNIX as u32, 0, 1),
        stmt(ret, refuse),
        // 12
        stmt(ret, allow),
    ]
}

/// Why the socket filter could not be installed.
#[derive(Debug, thiserror::Error)]
pub(super) enum SeccompError {
    /// `PR_SET_NO_NEW_PRIVS`, which an unprivileged filter needs, failed.
    #[error("no_new_privs: {source}")]
    NoNewPrivs {
        /// The `prctl` failure.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused the filter.
    #[error("cannot install the socket filter: {source}")]
    Install {
        /// The `seccomp` failure.
        #[source]
        source: std::io::Error,
    },
}

/// Installs the filter on this thread (and what it starts). Call in the command's process,
/// after everything that needs Unix sockets is set up.
pub(super) fn deny_unix_sockets() -> Result<(), SeccompError> {
    let mut filter = program();
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: prctl with constant arguments; seccomp with a valid program that lives for the
    // call.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(SeccompError::NoNewPrivs {
                source: std::io::Error::last_os_error(),
            });
        }
        if libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const prog,
        ) != 0
        {
            return Err(SeccompError::Install {
                source: std::io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
