//! `[home_assistant] ca_file` and `fingerprint`: how homebot trusts an `https://` Home
//! Assistant. Checked when the configuration is loaded, so a missing or unreadable CA
//! file, a file with no certificate or a malformed fingerprint stops the start with the
//! key named, never a connection failure later. The channel builds its TLS settings from
//! the same functions (`channels/home_assistant/tls.rs`).

use super::{ConfigError, HomeAssistantConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use std::path::{Path, PathBuf};

/// A SHA-256 certificate fingerprint: 32 bytes.
pub type Fingerprint = [u8; 32];

/// `sha256:AB:CD:…` (the documented form), or the same hex with or without colons, in
/// either case, with or without the `sha256:` prefix (so the value `openssl x509
/// -noout -fingerprint -sha256` prints after `=` can be pasted as it is).
pub fn parse_fingerprint(s: &str) -> Result<Fingerprint, TrustError> {
    let t = s.trim();
    let hex = match t.get(..7) {
        Some(p) if p.eq_ignore_ascii_case("sha256:") => &t[7..],
        _ => t,
    };
    let digits: String = hex.chars().filter(|c| *c != ':').collect();
    let well_formed = digits.len() == 64
        && digits.chars().all(|c| c.is_ascii_hexdigit())
        && (!hex.contains(':') || hex.split(':').all(|pair| pair.len() == 2));
    if !well_formed {
        return Err(TrustError::Fingerprint(s.chars().take(120).collect()));
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).expect("checked hex digits");
    }
    Ok(out)
}

/// The documented form: `sha256:AB:CD:…`.
pub fn format_fingerprint(f: &Fingerprint) -> String {
    let pairs: Vec<String> = f.iter().map(|b| format!("{b:02X}")).collect();
    format!("sha256:{}", pairs.join(":"))
}

/// The certificates of a PEM bundle (a private CA, maybe with intermediates), each checked
/// to be usable as a trust anchor.
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TrustError> {
    let path_buf = || path.to_path_buf();
    let bytes = std::fs::read(path).map_err(|source| TrustError::Unreadable {
        path: path_buf(),
        source,
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|source| TrustError::NotPem {
            path: path_buf(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TrustError::NoCertificate(path_buf()));
    }
    for (i, c) in certs.iter().enumerate() {
        webpki::anchor_from_trusted_cert(c).map_err(|source| TrustError::NotX509 {
            index: i + 1,
            path: path_buf(),
            source,
        })?;
    }
    Ok(certs)
}

/// Why `fingerprint` or `ca_file` cannot be trusted as they are.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("must be the SHA-256 fingerprint of Home Assistant's certificate, 32 bytes in hex like \"sha256:AB:CD:…\" (what `openssl x509 -noout -fingerprint -sha256 -in CERT` prints), got {0:?}")]
    Fingerprint(String),
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a readable PEM file: {source}", path.display())]
    NotPem {
        path: PathBuf,
        source: rustls_pki_types::pem::Error,
    },
    #[error("{} holds no certificate (a PEM file with -----BEGIN CERTIFICATE----- blocks, the CA that signed Home Assistant's certificate)", .0.display())]
    NoCertificate(PathBuf),
    #[error("certificate {index} of {} is not a valid X.509 certificate: {source}", path.display())]
    NotX509 {
        index: usize,
        path: PathBuf,
        source: webpki::Error,
    },
}

impl HomeAssistantConfig {
    /// A relative `ca_file` is relative to the folder of `config.toml` (the workspace).
    pub(super) fn resolve_paths(&mut self, config_file: &Path) {
        let base = config_file.parent().filter(|p| p.is_absolute());
        if let (Some(f), Some(base)) = (&self.ca_file, base) {
            if f.is_relative() {
                self.ca_file = Some(base.join(f));
            }
        }
    }

    pub(super) fn validate_tls(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: format!("home_assistant.{key}"),
            message,
        };
        if let Some(f) = &self.fingerprint {
            parse_fingerprint(f).map_err(|e| invalid("fingerprint", e.to_string()))?;
        }
        if let Some(ca) = &self.ca_file {
            read_ca_file(ca).map_err(|e| invalid("ca_file", e.to_string()))?;
        }
        if self.ca_file.is_some() && self.fingerprint.is_some() {
            return Err(invalid(
                "fingerprint",
                "set either ca_file (the CA that signed Home Assistant's certificate) or fingerprint (that one certificate), not both".into(),
            ));
        }
        let key = match (&self.ca_file, &self.fingerprint) {
            (Some(_), _) => "ca_file",
            (_, Some(_)) => "fingerprint",
            _ => return Ok(()),
        };
        match &self.url {
            Some(u) if !u.starts_with("https://") => Err(invalid(
                key,
                format!("is only for an https:// url, and url is {u:?}: give Home Assistant's https:// address"),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn parse(s: &str) -> Result<Config, ConfigError> {
        Config::parse(s, Path::new("/ws/config.toml"))
    }

    /// A real CA certificate (its key was thrown away).
    const CA_PEM: &str = include_str!("../../tests/fixtures/tls/ca.pem");

    const FP: &str = "sha256:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF";

    #[test]
    fn fingerprints_in_the_forms_people_paste() {
        let want = parse_fingerprint(FP).unwrap();
        assert_eq!(want[0], 0x00);
        assert_eq!(want[10], 0xAA);
        assert_eq!(format_fingerprint(&want), FP);
        for same in [
            FP.to_lowercase(),
            FP.trim_start_matches("sha256:").to_string(),
            FP.trim_start_matches("sha256:").replace(':', ""),
            format!("SHA256:{}", &FP[7..]),
            format!("  {FP} "),
        ] {
            assert_eq!(parse_fingerprint(&same).unwrap(), want, "{same}");
        }
        for bad in [
            "",
            "sha256:",
            &FP[..FP.len() - 3],
            &format!("{FP}:00"),
            &FP.replace("FF", "GG"),
            "sha1:00:11",
            &FP.replacen("00:11", "0:011", 1),
        ] {
            let e = parse_fingerprint(bad).unwrap_err();
            assert!(e.to_string().contains("sha256:AB:CD"), "{bad}: {e}");
        }
    }

    #[test]
    fn https_url_with_ca_file_or_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, CA_PEM).unwrap();
        let c = parse(&format!(
            "[home_assistant]\nurl = \"https://ha.lan:8123\"\nca_file = {:?}\n",
            ca.display().to_string()
        ))
        .unwrap();
        let ha = &c.home_assistant;
        assert_eq!(
            ha.websocket_url().as_deref(),
            Some("wss://ha.lan:8123/api/websocket")
        );
        assert_eq!(read_ca_file(ha.ca_file.as_ref().unwrap()).unwrap().len(), 1);
        let c = parse(&format!(
            "[home_assistant]\nurl = \"https://ha.lan:8123/\"\nfingerprint = \"{FP}\"\n"
        ))
        .unwrap();
        assert_eq!(
            parse_fingerprint(c.home_assistant.fingerprint.as_deref().unwrap()).unwrap(),
            parse_fingerprint(FP).unwrap()
        );
        // relative to the workspace
        let ws = dir.path().join("config.toml");
        let c = Config::parse(
            "[home_assistant]\nurl = \"https://h\"\nca_file = \"ca.pem\"\n",
            &ws,
        )
        .unwrap();
        assert_eq!(c.home_assistant.ca_file.as_deref(), Some(ca.as_path()));
    }

    #[test]
    fn bad_tls_settings_are_config_errors() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let broken = dir.path().join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let truncated = dir.path().join("truncated.pem");
        std::fs::write(&truncated, "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
        let good = dir.path().join("ca.pem");
        std::fs::write(&good, CA_PEM).unwrap();
        let missing = dir.path().join("missing.pem");
        let url = "url = \"https://ha.lan:8123\"";
        for (body, key, says) in [
            (
                format!("{url}\nca_file = {:?}", missing.display().to_string()),
                "ca_file",
                "cannot read",
            ),
            (
                format!("{url}\nca_file = {:?}", empty.display().to_string()),
                "ca_file",
                "holds no certificate",
            ),
            (
                format!("{url}\nca_file = {:?}", broken.display().to_string()),
                "ca_file",
                "not a valid X.509 certificate",
            ),
            (
                format!("{url}\nca_file = {:?}", truncated.display().to_string()),
                "ca_file",
                "not a readable PEM file",
            ),
            (
                format!("{url}\nfingerprint = \"AB:CD\""),
                "fingerprint",
                "32 bytes",
            ),
            (
                format!(
                    "{url}\nfingerprint = \"{FP}\"\nca_file = {:?}",
                    good.display().to_string()
                ),
                "fingerprint",
                "not both",
            ),
            (
                format!("url = \"http://ha.lan:8123\"\nfingerprint = \"{FP}\""),
                "fingerprint",
                "only for an https:// url",
            ),
            (
                format!(
                    "url = \"http://ha.lan:8123\"\nca_file = {:?}",
                    good.display().to_string()
                ),
                "ca_file",
                "only for an https:// url",
            ),
            ("url = \"https://\"".to_string(), "url", "with a host"),
        ] {
            let e = parse(&format!("[home_assistant]\n{body}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("key `home_assistant.{key}`")) && e.contains(says),
                "{body}: {e}"
            );
        }
    }
}
