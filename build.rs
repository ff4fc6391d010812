//! Embeds the shipped skill folders (everything under `skills/` but the Rust plugin
//! sources) into the binary, so a homebot copied away from its source tree still has
//! its modes: see `skills::builtin_dir`.

use std::path::Path;

fn collect(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("skills/ is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if p.is_dir() {
            collect(&p, base, out);
        } else if p.extension().and_then(|e| e.to_str()) != Some("rs") {
            let rel = p
                .strip_prefix(base)
                .expect("below skills/")
                .to_string_lossy()
                .replace('\\', "/");
            out.push((
                rel,
                p.canonicalize().expect("file exists").display().to_string(),
            ));
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=skills");
    pack_relative_relocations();
    let base = Path::new("skills");
    let mut files = Vec::new();
    collect(base, base, &mut files);
    let mut code = String::from("/// Shipped skill files: (path below skills/, contents).\npub static BUILTIN_SKILL_FILES: &[(&str, &[u8])] = &[\n");
    for (rel, abs) in files {
        code.push_str(&format!("    ({rel:?}, include_bytes!({abs:?})),\n"));
    }
    code.push_str("];\n");
    let out =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtin_skills.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}

/// The executable's relative relocations packed (DT_RELR, glibc 2.36+, GNU ld 2.38+):
/// a position-independent homebot has ~48,000 of them (vtables, `&'static str` tables),
/// 1.1 MiB of `.rela.dyn` that the loader reads at every start and that then stays
/// resident; packed they are a few KiB. Where the C library has no DT_RELR support,
/// GNU ld leaves them unpacked, so the binary still runs there.
fn pack_relative_relocations() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
