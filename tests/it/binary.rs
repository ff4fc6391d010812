//! The built `homebot` binary itself: `build.rs` links it with packed relative
//! relocations (DT_RELR), so the loader does not read and keep ~1 MiB of `.rela.dyn` at
//! every start (docs/operations.md, Footprint). Checked from the ELF section headers,
//! where the C library the tests run on supports DT_RELR (GNU ld leaves the relocations
//! unpacked on one that does not).

/// The section types of a 64-bit little-endian ELF file.
fn section_types(elf: &[u8]) -> Vec<u32> {
    assert_eq!(&elf[..4], b"\x7fELF", "an ELF file");
    assert_eq!((elf[4], elf[5]), (2, 1), "64-bit little-endian");
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3A), u16_at(0x3C));
    (0..shnum)
        .map(|i| u32_at(shoff + i * shentsize + 4))
        .collect()
}

/// The C library this test process runs on, from its own memory map.
fn loaded_libc() -> Option<std::path::PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libc.so.6"))
        .map(Into::into)
}

#[test]
#[cfg(all(target_os = "linux", target_env = "gnu", target_arch = "x86_64"))]
fn relative_relocations_are_packed_where_the_c_library_supports_it() {
    const SHT_RELR: u32 = 19;
    let libc = loaded_libc().expect("a glibc process maps libc.so.6");
    let libc = std::fs::read(&libc).unwrap();
    let supported = libc
        .windows(b"GLIBC_ABI_DT_RELR".len())
        .any(|w| w == b"GLIBC_ABI_DT_RELR");
    let bin = std::fs::read(env!("CARGO_BIN_EXE_homebot")).unwrap();
    let types = section_types(&bin);
    assert!(types.len() > 10, "section headers read: {types:?}");
    if supported {
        assert!(
            types.contains(&SHT_RELR),
            "no .relr.dyn section: is build.rs still passing -z pack-relative-relocs?"
        );
    } else {
        println!("this C library has no DT_RELR: the relocations stay unpacked");
    }
}
