//! https to Home Assistant: the rustls client settings of the `wss://` connection, and
//! what a refused certificate means in words a household can act on.
//!
//! Trust, in order (config in `src/config/ha_tls.rs`):
//! - `fingerprint` set: exactly the certificate with that SHA-256 is accepted — a
//!   self-signed one too (its own CA, `CA:TRUE`, which rustls refuses as a server
//!   certificate even when given as a CA), and whatever host name it names. The handshake's
//!   signature is still verified with that certificate's key, so only the holder of its
//!   private key can present it. Its validity dates are not checked: the pin is the trust.
//! - else the built-in Mozilla roots (`webpki-roots`, the same on every machine, offline
//!   too: no system store is read), plus `ca_file`'s certificates when it is set. The host
//!   name (or IP address) of the url must be in the certificate, which must be in date.
//!
//! A refused certificate carries the presented certificate's fingerprint, so `status` and
//! `doctor` can say which certificate it was and how to trust it.

use super::error::TlsSetupError;
use crate::config::{
    format_fingerprint, parse_fingerprint, read_ca_file, Fingerprint, HomeAssistantConfig,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, OtherError, SignatureScheme};
use std::sync::Arc;

/// The client settings for an `https://` Home Assistant (`None` for `http://`).
pub(crate) fn client_config(
    cfg: &HomeAssistantConfig,
) -> Result<Option<Arc<ClientConfig>>, TlsSetupError> {
    if !cfg
        .url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"))
    {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pin = match &cfg.fingerprint {
        Some(f) => Some(parse_fingerprint(f).map_err(|e| TlsSetupError::Fingerprint(Arc::new(e)))?),
        None => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match pin {
        Some(pin) => Arc::new(Pinned {
            pin,
            provider: provider.clone(),
        }),
        None => {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            if let Some(ca) = &cfg.ca_file {
                let certs = read_ca_file(ca).map_err(|e| TlsSetupError::CaFile(Arc::new(e)))?;
                for c in certs {
                    roots.add(c).map_err(|source| TlsSetupError::CaRefused {
                        path: ca.clone(),
                        source,
                    })?;
                }
            }
            let inner =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(TlsSetupError::Roots)?;
            Arc::new(Explained {
                inner,
                ca_file: cfg.ca_file.is_some(),
            })
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsSetupError::Versions)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Some(Arc::new(config)))
}

fn sha256(der: &[u8]) -> Fingerprint {
    let d = ring::digest::digest(&ring::digest::SHA256, der);
    d.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

/// Why a certificate was refused, with the certificate's fingerprint.
#[derive(Debug)]
pub(crate) struct Untrusted {
    /// What rustls (or the pin) found, in words.
    why: String,
    presented: Fingerprint,
    /// How to make homebot trust it.
    hint: &'static str,
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "certificate not trusted: {}; Home Assistant presented {} — {}",
            self.why,
            format_fingerprint(&self.presented),
            self.hint
        )
    }
}

impl std::error::Error for Untrusted {}

fn refuse(u: Untrusted) -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(u))))
}

const PIN_IT: &str = "if that is Home Assistant's own certificate (check with `openssl x509 -noout -fingerprint -sha256 -in CERT` where it is kept), pin it: [home_assistant] fingerprint = \"sha256:…\"";
const CA_OR_PIN: &str = "set [home_assistant] ca_file to the PEM file of the CA that signed it, or pin the certificate itself with [home_assistant] fingerprint = \"sha256:…\" after checking it (`openssl x509 -noout -fingerprint -sha256 -in CERT`)";

/// The webpki verification, with its refusals explained.
#[derive(Debug)]
struct Explained {
    inner: Arc<WebPkiServerVerifier>,
    ca_file: bool,
}

impl ServerCertVerifier for Explained {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            .map_err(|e| {
                let (why, hint) = reason(&e, server_name, self.ca_file);
                refuse(Untrusted {
                    why,
                    presented: sha256(end_entity),
                    hint,
                })
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A refusal in words, and how to trust the certificate.
fn reason(e: &rustls::Error, name: &ServerName<'_>, ca_file: bool) -> (String, &'static str) {
    let host = name.to_str();
    let rustls::Error::InvalidCertificate(c) = e else {
        return (e.to_string(), CA_OR_PIN);
    };
    match c {
        CertificateError::UnknownIssuer if ca_file => (
            "it is not signed by ca_file's CA nor by a public CA".into(),
            CA_OR_PIN,
        ),
        CertificateError::UnknownIssuer => (
            "it is signed by an unknown CA (a private CA, or self-signed)".into(),
            CA_OR_PIN,
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => (
            format!("it is not issued for {host} (the url's host must be one of its names or addresses)"),
            "use the host name the certificate names in the url, or pin the certificate with [home_assistant] fingerprint = \"sha256:…\"",
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => (
            "it has expired".into(),
            "renew Home Assistant's certificate (or pin this one with [home_assistant] fingerprint = \"sha256:…\")",
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
            "it is not valid yet (check both machines' clocks)".into(),
            CA_OR_PIN,
        ),
        CertificateError::Other(OtherError(o))
            if matches!(
                o.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            ) =>
        {
            (
                "it is self-signed and marked as its own CA (CA:TRUE), which rustls never accepts as a server certificate, not even from ca_file".into(),
                PIN_IT,
            )
        }
        other => (format!("{other:?}"), CA_OR_PIN),
    }
}

/// Exactly one certificate, by its SHA-256; the handshake signature still checked with it.
#[derive(Debug)]
struct Pinned {
    pin: Fingerprint,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let presented = sha256(end_entity);
        // a plain comparison: both values are public, nothing secret is timed
        if presented == self.pin {
            return Ok(ServerCertVerified::assertion());
        }
        Err(refuse(Untrusted {
            why: format!(
                "it does not match [home_assistant] fingerprint {}",
                format_fingerprint(&self.pin)
            ),
            presented,
            hint: "if Home Assistant's certificate was renewed, check the new one (`openssl x509 -noout -fingerprint -sha256 -in CERT`) and update the pin; otherwise something else answers at that address",
        }))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A certificate refusal (or another TLS failure) in a connection error, in words
/// (`None`: not a TLS problem — then the transport's own words are the reason).
pub(crate) fn explain(e: &tokio_tungstenite::tungstenite::Error) -> Option<String> {
    use tokio_tungstenite::tungstenite::{error::TlsError, Error};
    let r: &rustls::Error = match e {
        Error::Io(io) => io.get_ref()?.downcast_ref::<rustls::Error>()?,
        Error::Tls(TlsError::Rustls(r)) => r,
        _ => return None,
    };
    match r {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(o))) => {
            if let Some(u) = o.downcast_ref::<Untrusted>() {
                return Some(u.to_string());
            }
            Some(format!("certificate not trusted: {r}"))
        }
        rustls::Error::InvalidCertificate(c) => Some(format!("certificate not trusted: {c:?}")),
        rustls::Error::InvalidMessage(_) => Some(format!(
            "TLS handshake failed: {r} (does Home Assistant serve https at that address?)"
        )),
        other => Some(format!("TLS handshake failed: {other}")),
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
