//! https for the real Home Assistant of the test kit: certificates made with the
//! `openssl` command line, as a household makes them, and the kit's own set-up clients,
//! which trust the HA the kit started itself (any certificate: only the test's own
//! set-up goes through them, never homebot).

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The certificate and key HA serves (`http: ssl_certificate`, `ssl_key`).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Run `openssl` with these words (none has a space) in `dir`; its standard output.
fn openssl(dir: &Path, words: &str) -> String {
    let args: Vec<&str> = words.split_whitespace().collect();
    let out = std::process::Command::new("openssl")
        .args(&args)
        .current_dir(dir)
        .output()
        .expect("the openssl command line is installed");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A private CA (`ca.pem`) and a leaf it signed for 127.0.0.1 and localhost
/// (`CA:FALSE`, serverAuth), in `dir`; the leaf is what HA serves.
pub fn private_ca(dir: &Path) -> (PathBuf, TlsFiles) {
    std::fs::create_dir_all(dir).unwrap();
    openssl(
        dir,
        "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 3 -subj /CN=homebot-test-household-CA",
    );
    std::fs::write(
        dir.join("leaf.ext"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    openssl(
        dir,
        "req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=homeassistant.local",
    );
    openssl(
        dir,
        "x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 -extfile leaf.ext -out leaf.pem",
    );
    (
        dir.join("ca.pem"),
        TlsFiles {
            cert: dir.join("leaf.pem"),
            key: dir.join("leaf.key"),
        },
    )
}

/// A self-signed certificate the way Home Assistant's documentation makes one
/// (`openssl req -x509 … -addext subjectAltName=…`): its own CA, `CA:TRUE`.
pub fn self_signed(dir: &Path) -> TlsFiles {
    std::fs::create_dir_all(dir).unwrap();
    openssl(
        dir,
        "req -sha256 -addext subjectAltName=IP:127.0.0.1 -newkey rsa:2048 -nodes -keyout privkey.pem -x509 -days 730 -out fullchain.pem -subj /CN=homeassistant.local",
    );
    let text = openssl(dir, "x509 -noout -text -in fullchain.pem");
    assert!(text.contains("CA:TRUE"), "the household's kind: {text}");
    TlsFiles {
        cert: dir.join("fullchain.pem"),
        key: dir.join("privkey.pem"),
    }
}

/// `sha256:AB:CD:…` of a PEM certificate, as `openssl x509 -fingerprint -sha256` prints it.
pub fn fingerprint(cert: &Path) -> String {
    let dir = cert.parent().unwrap();
    let out = openssl(
        dir,
        &format!("x509 -noout -fingerprint -sha256 -in {}", cert.display()),
    );
    // "sha256 Fingerprint=AB:CD:…"
    let hex = out.trim().rsplit('=').next().unwrap().to_string();
    assert_eq!(hex.len(), 95, "{out}");
    format!("sha256:{hex}")
}

/// HA's scheme, and the lines of its `http:` section that make it serve https.
pub(super) fn http_lines(tls: Option<&TlsFiles>) -> (&'static str, String) {
    match tls {
        None => ("http", String::new()),
        Some(t) => (
            "https",
            format!(
                "  ssl_certificate: {}\n  ssl_key: {}\n",
                t.cert.display(),
                t.key.display()
            ),
        ),
    }
}

impl super::HaWs {
    /// [`super::HaWs::connect`] to an HA the kit started with
    /// [`super::RealHa::start_tls`] (`wss://`).
    pub async fn connect_tls(port: u16) -> Self {
        let (ws, _) = tokio_tungstenite::connect_async_tls_with_config(
            format!("wss://127.0.0.1:{port}/api/websocket"),
            None,
            true,
            Some(setup_connector()),
        )
        .await
        .unwrap();
        Self::auth(ws).await
    }
}

/// The kit's set-up WebSocket client: it trusts the HA it started, whatever its certificate.
pub fn setup_connector() -> tokio_tungstenite::Connector {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    tokio_tungstenite::Connector::Rustls(Arc::new(config))
}

#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
