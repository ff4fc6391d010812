//! The pin, in memory against a rustls server: the pinned certificate is accepted whatever
//! host the url names, but only from a server holding its key (the handshake's signature
//! is verified, in TLS 1.3 and 1.2); another certificate is refused with both
//! fingerprints. The fixture is a self-signed `CA:TRUE` certificate with a test-only key
//! (tests/fixtures/tls/self-signed.*); the real Home Assistant cases are tests/it/ha_tls.rs.

use super::*;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ClientConnection, ServerConfig, ServerConnection, SupportedProtocolVersion};

const CERT: &[u8] = include_bytes!("../../tests/fixtures/tls/self-signed.pem");
const KEY: &[u8] = include_bytes!("../../tests/fixtures/tls/self-signed.key");
const OTHER: &[u8] = include_bytes!("../../tests/fixtures/tls/ca.pem");

fn cert(pem: &[u8]) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem).unwrap()
}

#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// A server presenting the fixture certificate, signing with its own key or another.
fn server(own_key: bool, version: &'static SupportedProtocolVersion) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = if own_key {
        PrivateKeyDer::from_pem_slice(KEY).unwrap()
    } else {
        let rng = ring::rand::SystemRandom::new();
        let alg = &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING;
        let doc = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(doc.as_ref().to_vec()))
    };
    let signer = provider.key_provider.load_private_key(key).unwrap();
    let certified = CertifiedKey::new(vec![cert(CERT)], signer);
    Arc::new(
        ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[version])
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Fixed(Arc::new(certified)))),
    )
}

fn client(extra: impl FnOnce(&mut HomeAssistantConfig)) -> Arc<ClientConfig> {
    let mut cfg = HomeAssistantConfig {
        // not a name the certificate holds: a pin does not look at names
        url: Some("https://10.1.2.3:8123".into()),
        ..Default::default()
    };
    extra(&mut cfg);
    client_config(&cfg)
        .unwrap()
        .expect("https has TLS settings")
}

/// Run a handshake in memory; the client's error, if any.
fn handshake(client: Arc<ClientConfig>, server: Arc<ServerConfig>) -> Result<(), rustls::Error> {
    let name = ServerName::try_from("10.1.2.3").unwrap();
    let mut c = ClientConnection::new(client, name).unwrap();
    let mut s = ServerConnection::new(server).unwrap();
    for _ in 0..20 {
        let mut buf = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            s.read_tls(&mut rd).unwrap();
            // the server's own view (an alert received) is not what is tested
            let _ = s.process_new_packets();
        }
        let mut buf = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).unwrap();
            c.process_new_packets()?;
        }
        if !c.is_handshaking() && !s.is_handshaking() {
            return Ok(());
        }
    }
    panic!("the handshake did not finish")
}

fn pin_of(pem: &[u8]) -> String {
    format_fingerprint(&sha256(&cert(pem)))
}

#[test]
fn http_needs_no_tls_settings() {
    let cfg = HomeAssistantConfig {
        url: Some("http://ha.lan:8123".into()),
        ..Default::default()
    };
    assert!(client_config(&cfg).unwrap().is_none());
}

/// Settings that cannot be built say which setting and why, as `status` and `doctor`
/// show them (`https: …`), and keep what rustls or the file system said as the source.
#[test]
fn settings_that_cannot_be_built_name_the_setting_and_the_reason() {
    use std::error::Error as _;
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone.pem");
    let https = |extra: &dyn Fn(&mut HomeAssistantConfig)| {
        let mut cfg = HomeAssistantConfig {
            url: Some("https://ha.lan:8123".into()),
            ..Default::default()
        };
        extra(&mut cfg);
        client_config(&cfg).unwrap_err()
    };
    let e = https(&|c| c.ca_file = Some(gone.clone()));
    assert!(matches!(e, TlsSetupError::CaFile(_)), "{e:?}");
    let said = super::super::NotConfigured::from(e.clone()).to_string();
    assert!(
        said.starts_with(&format!("https: ca_file: cannot read {}: ", gone.display())),
        "{said}"
    );
    assert!(e.source().is_some(), "the file system's error is kept");
    assert_eq!(e.clone(), e, "cloned with the state that holds it");

    let e = https(&|c| c.fingerprint = Some("sha256:12:34".into()));
    assert!(
        e.to_string()
            .starts_with("fingerprint must be the SHA-256 fingerprint"),
        "{e}"
    );
    assert_ne!(e, https(&|c| c.ca_file = Some(gone.clone())));
}

#[test]
fn a_pinned_self_signed_certificate_is_accepted_from_its_key_holder_only() {
    let pinned = || client(|c| c.fingerprint = Some(pin_of(CERT)));
    for v in [&rustls::version::TLS13, &rustls::version::TLS12] {
        handshake(pinned(), server(true, v))
            .unwrap_or_else(|e| panic!("{v:?}: the pinned certificate is accepted: {e}"));
        let e = handshake(pinned(), server(false, v)).unwrap_err();
        assert!(
            matches!(
                e,
                rustls::Error::InvalidCertificate(CertificateError::BadSignature)
            ),
            "{v:?}: the certificate without its key is refused: {e:?}"
        );
    }
}

#[test]
fn another_certificate_than_the_pinned_one_is_refused_with_both_fingerprints() {
    let e = handshake(
        client(|c| c.fingerprint = Some(pin_of(OTHER))),
        server(true, &rustls::version::TLS13),
    )
    .unwrap_err();
    let words = explain(&tokio_tungstenite::tungstenite::Error::Io(
        std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    ))
    .unwrap();
    assert!(
        words.starts_with(&format!(
            "certificate not trusted: it does not match [home_assistant] fingerprint {}; Home Assistant presented {}",
            pin_of(OTHER),
            pin_of(CERT)
        )),
        "{words}"
    );
}

/// The household's self-signed certificate, refused before its issuer is even looked
/// for: the advice is the pin.
#[test]
fn without_a_pin_a_self_signed_certificate_is_refused_and_explained() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ha.pem");
    std::fs::write(&ca, CERT).unwrap();
    for cfg in [client(|_| {}), client(|c| c.ca_file = Some(ca.clone()))] {
        let e = handshake(cfg, server(true, &rustls::version::TLS13)).unwrap_err();
        let words = explain(&tokio_tungstenite::tungstenite::Error::Io(
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        ))
        .unwrap();
        assert!(
            words.starts_with(
                "certificate not trusted: it is self-signed and marked as its own CA (CA:TRUE)"
            ) && words.contains(&format!("Home Assistant presented {}", pin_of(CERT)))
                && words.contains("pin it: [home_assistant] fingerprint"),
            "{words}"
        );
    }
}
