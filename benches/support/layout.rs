//! How much of `build/symbol-order.txt` a binary still has.
//!
//! The release link places the functions the order file names at the start of `.text`
//! (build.rs). The file names symbols exactly, and names move under code changes: a function
//! thin LTO makes visible across modules gets a `.llvm.<hash of its module>` suffix, and any
//! change to the module changes the hash. Names the binary no longer has are skipped by the
//! linker, so a stale file breaks nothing; the functions it misses land among the cold code,
//! and a short run then maps 64 KiB of `.text` around each of them (its peak RSS went from 7.0 to
//! 10.0 MiB with 89% of the names still found). The `run` benchmark prints the share found.

use std::collections::HashSet;
use std::path::Path;

/// Below this share of its names found, the order file is reported as stale.
pub(crate) const FRESH_SHARE: f64 = 0.95;

/// The names in `order` (one a line) found among the symbols of the ELF file `binary`, and
/// how many names `order` has.
pub(crate) fn order_coverage(binary: &Path, order: &Path) -> Result<(usize, usize), String> {
    let order =
        std::fs::read_to_string(order).map_err(|err| format!("{}: {err}", order.display()))?;
    let elf = std::fs::read(binary).map_err(|err| format!("{}: {err}", binary.display()))?;
    let symbols = symbol_names(&elf).ok_or("no ELF symbol table (a stripped binary?)")?;
    let names: Vec<&str> = order.lines().filter(|line| !line.is_empty()).collect();
    let found = names
        .iter()
        .filter(|name| symbols.contains(name.as_bytes()))
        .count();
    Ok((found, names.len()))
}

/// The names of a 64-bit little-endian ELF file's static symbol table (`.symtab`).
fn symbol_names(elf: &[u8]) -> Option<HashSet<&[u8]>> {
    const SHT_SYMTAB: u32 = 2;
    const SYM_SIZE: usize = 24;
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let section_table = u64_at(elf, 0x28)? as usize;
    let entry_size = u16_at(elf, 0x3a)? as usize;
    let sections = u16_at(elf, 0x3c)? as usize;
    let section = |index: usize| {
        elf.get(section_table + index * entry_size..)?
            .get(..entry_size)
    };
    let symtab = (0..sections)
        .filter_map(section)
        .find(|header| u32_at(header, 4) == Some(SHT_SYMTAB))?;
    let strtab = section(u32_at(symtab, 0x28)? as usize)?;
    let bytes = |header: &[u8]| {
        let start = u64_at(header, 0x18)? as usize;
        elf.get(start..start + u64_at(header, 0x20)? as usize)
    };
    let (symbols, strings) = (bytes(symtab)?, bytes(strtab)?);
    Some(
        symbols
            .chunks_exact(SYM_SIZE)
            .filter_map(|symbol| {
                let name = strings.get(u32_at(symbol, 0)? as usize..)?;
                let end = name.iter().position(|&b| b == 0)?;
                Some(&name[..end])
            })
            .filter(|name| !name.is_empty())
            .collect(),
    )
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}
