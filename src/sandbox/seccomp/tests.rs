//! The filter program, run by a classic-BPF interpreter over the `seccomp_data` the kernel
//! would pass. The opcodes and verdicts are the kernel ABI's numbers (linux/filter.h,
//! linux/seccomp.h), written out here so that a program built with the wrong ones fails.

use nix::libc;

use super::program;

const LD_W_ABS: u16 = 0x20;
const JMP_JEQ_K: u16 = 0x15;
const JMP_JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;

const ALLOW: u32 = 0x7fff_0000;
const ERRNO: u32 = 0x0005_0000;
const EACCES: u32 = 13;
const ENOSYS: u32 = 38;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;

/// `struct seccomp_data`: nr, arch, instruction pointer, six arguments.
fn data(arch: u32, nr: u32, arg0: u64) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    bytes[0..4].copy_from_slice(&nr.to_ne_bytes());
    bytes[4..8].copy_from_slice(&arch.to_ne_bytes());
    bytes[16..24].copy_from_slice(&arg0.to_ne_bytes());
    bytes
}

/// The verdict of `program` for `data`; panics on anything this filter should not contain.
fn run(program: &[libc::sock_filter], data: &[u8; 64]) -> u32 {
    let mut acc = 0u32;
    let mut pc = 0usize;
    loop {
        let insn = program.get(pc).expect("the program ran off its end");
        pc += 1;
        match insn.code {
            LD_W_ABS => {
                let at = insn.k as usize;
                let word = data.get(at..at + 4).expect("a load past seccomp_data");
                acc = u32::from_ne_bytes(word.try_into().unwrap());
            }
            JMP_JEQ_K | JMP_JGE_K => {
                let taken = if insn.code == JMP_JEQ_K {
                    acc == insn.k
                } else {
                    acc >= insn.k
                };
                pc += usize::from(if taken { insn.jt } else { insn.jf });
            }
            RET_K => return insn.k,
            other => panic!(
                "opcode {other:#x} at {} is not one this filter uses",
                pc - 1
            ),
        }
    }
}

#[test]
fn unix_sockets_and_io_uring_are_refused_and_everything_else_is_allowed() {
    let program = program();
    let native = super::NATIVE_ARCH;
    let verdict = |arch: u32, nr: i64, arg0: i32| {
        let nr = u32::try_from(nr).unwrap();
        run(&program, &data(arch, nr, u64::try_from(arg0).unwrap()))
    };
    assert_eq!(
        verdict(native, libc::SYS_socket, libc::AF_UNIX),
        ERRNO | EACCES
    );
    assert_eq!(verdict(native, libc::SYS_io_uring_setup, 0), ERRNO | EACCES);
    assert_eq!(verdict(native, libc::SYS_socket, libc::AF_INET), ALLOW);
    assert_eq!(verdict(native, libc::SYS_socket, libc::AF_INET6), ALLOW);
    // A connected pair inside the process reaches nothing.
    assert_eq!(verdict(native, libc::SYS_socketpair, libc::AF_UNIX), ALLOW);
    assert_eq!(verdict(native, libc::SYS_read, 0), ALLOW);
    assert_eq!(verdict(native, libc::SYS_connect, 3), ALLOW);
}

#[test]
fn calls_the_filter_cannot_read_fail_with_enosys() {
    let program = program();
    // x32 calls on x86_64 share the arch but carry a bit in their number.
    let x32 = 0x4000_0000 | libc::SYS_socket as u32;
    assert_eq!(
        run(
            &program,
            &data(super::NATIVE_ARCH, x32, libc::AF_UNIX as u64)
        ),
        ERRNO | ENOSYS
    );
    assert_eq!(
        run(&program, &data(super::NATIVE_ARCH, x32 | 0x1000, 0)),
        ERRNO | ENOSYS
    );
    // Another ABI (32-bit `int 0x80`), whatever the call.
    for nr in [1u32, 102, 359] {
        assert_eq!(
            run(&program, &data(AUDIT_ARCH_I386, nr, libc::AF_UNIX as u64)),
            ERRNO | ENOSYS
        );
    }
}
