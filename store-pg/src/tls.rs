//! TLS to the server with rustls, as the URL asks (`sslmode`, `sslrootcert`, libpq's names):
//!
//! - no `sslmode`, `disable`, `allow`: plain TCP (a server on 127.0.0.1 needs nothing more);
//! - `prefer`: TLS if the server offers it, else plain, the certificate not checked;
//! - `require`: TLS or no connection, the certificate not checked (as libpq; with
//!   `sslrootcert` it is checked as for `verify-ca`);
//! - `verify-ca`: the certificate must chain to a trusted CA;
//! - `verify-full`: that, and name the host connected to.
//!
//! Trusted CAs are those of `sslrootcert=FILE` (PEM), or the system's (`sslrootcert=system`,
//! the default): `$SSL_CERT_FILE` or the distribution's bundle. tokio-postgres knows neither
//! `verify-*` nor `sslrootcert`, so both are taken out of the URL here.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// What `sslmode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The TLS settings taken out of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    /// `sslrootcert`: a PEM file, or `None` for the system's CAs.
    pub root_cert: Option<PathBuf>,
}

/// Splits `url` into what tokio-postgres parses (without `sslmode` and `sslrootcert`) and the
/// TLS settings. Both forms: a URL's query (`?sslmode=verify-full`) and `key=value` pairs.
pub fn split(url: &str) -> Result<(String, Settings), String> {
    let mut mode = None;
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| -> Result<bool, String> {
        match key {
            "sslmode" => {
                mode = Some(match value {
                    "disable" | "allow" => Mode::Disable,
                    "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => {
                        return Err(format!(
                            "sslmode is disable, allow, prefer, require, verify-ca or \
                             verify-full, not {other:?}"
                        ))
                    }
                });
                Ok(true)
            }
            "sslrootcert" => {
                root_cert = (value != "system").then(|| PathBuf::from(value));
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    let url = url.trim();
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&') {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(key, &decode(value))? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() {
                    base.to_string()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
            None => url.to_string(),
        }
    } else {
        let mut kept = Vec::new();
        for word in url.split_whitespace() {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            if !take(key, value.trim_matches('\''))? {
                kept.push(word);
            }
        }
        kept.join(" ")
    };
    let mode = match (mode, &root_cert) {
        (None, _) => Mode::Disable,
        // libpq: `require` with a root certificate checks the chain as `verify-ca` does.
        (Some(Mode::Require), Some(_)) => Mode::VerifyCa,
        (Some(mode), _) => mode,
    };
    Ok((rest, Settings { mode, root_cert }))
}

/// `%XX` escapes of a URL query value (a path may hold `/` as `%2F`).
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Settings {
    /// The mode tokio-postgres negotiates with.
    pub fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The connector for these settings; `None` for plain TCP.
    pub fn connector(&self) -> Result<Option<Tls>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("cannot set up TLS: {e}"))?;
        let config = match self.mode {
            Mode::Disable => return Ok(None),
            Mode::Prefer | Mode::Require => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
            Mode::VerifyCa | Mode::VerifyFull => {
                let roots = Arc::new(self.roots()?);
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| format!("cannot use the CA certificates: {e}"))?;
                if self.mode == Mode::VerifyFull {
                    builder.with_webpki_verifier(webpki).with_no_client_auth()
                } else {
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(AnyName(webpki)))
                        .with_no_client_auth()
                }
            }
        };
        Ok(Some(Tls(Arc::new(config))))
    }

    /// The CAs to trust: `sslrootcert`'s, or the system's.
    fn roots(&self) -> Result<RootCertStore, String> {
        let file = match &self.root_cert {
            Some(file) => file.clone(),
            None => system_bundle().ok_or(
                "no system CA bundle found ($SSL_CERT_FILE, /etc/ssl/certs/ca-certificates.crt, \
                 …); name one with sslrootcert=FILE",
            )?,
        };
        let mut roots = RootCertStore::empty();
        let certs = CertificateDer::pem_file_iter(&file)
            .map_err(|e| format!("cannot read sslrootcert {}: {e}", file.display()))?;
        for cert in certs {
            let cert =
                cert.map_err(|e| format!("cannot read sslrootcert {}: {e}", file.display()))?;
            // A bundle may hold a certificate rustls cannot use; the others still count.
            let _ = roots.add(cert);
        }
        if roots.is_empty() {
            return Err(format!(
                "sslrootcert {} holds no CA certificate (PEM)",
                file.display()
            ));
        }
        Ok(roots)
    }
}

/// The system's CA bundle: `$SSL_CERT_FILE`, else where the common distributions keep it.
fn system_bundle() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        return Some(PathBuf::from(file));
    }
    [
        "/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Arch, Alpine
        "/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
        "/etc/ssl/ca-bundle.pem",             // openSUSE
        "/etc/ssl/cert.pem",                  // macOS, BSDs
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.is_file())
    .map(Path::to_path_buf)
}

/// `require` and `prefer`: any certificate (the connection is encrypted, its peer not
/// checked), but the handshake's signatures still verified.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain checked as `verify-full` checks it, the host name not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// tokio-postgres' TLS connector over rustls.
#[derive(Clone)]
pub struct Tls(Arc<ClientConfig>);

impl<S> MakeTlsConnect<S> for Tls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = Connect;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, host: &str) -> Result<Connect, Self::Error> {
        Ok(Connect {
            config: self.0.clone(),
            name: ServerName::try_from(host.to_string())?,
        })
    }
}

/// One connection's handshake.
pub struct Connect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let connector = tokio_rustls::TlsConnector::from(self.config);
            Ok(TlsStream(connector.connect(self.name, stream).await?))
        })
    }
}

/// An encrypted connection.
pub struct TlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for TlsStream<S> {
    /// No channel binding: SCRAM authenticates without it (`channel_binding=prefer`).
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_settings_come_out_of_the_url() {
        let (rest, settings) = split("postgres://u:p@h:5432/db").unwrap();
        assert_eq!(rest, "postgres://u:p@h:5432/db");
        assert_eq!(settings.mode, Mode::Disable);

        let (rest, settings) =
            split("postgres://u:p@h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=w")
                .unwrap();
        assert_eq!(rest, "postgres://u:p@h/db?application_name=w");
        assert_eq!(settings.mode, Mode::VerifyFull);
        assert_eq!(settings.root_cert, Some(PathBuf::from("/tmp/ca.pem")));

        let (rest, settings) = split("postgres://u:p@h/db?sslmode=require").unwrap();
        assert_eq!(rest, "postgres://u:p@h/db");
        assert_eq!((settings.mode, settings.root_cert), (Mode::Require, None));

        let (_, settings) = split("postgres://h/db?sslmode=require&sslrootcert=ca.pem").unwrap();
        assert_eq!(
            settings.mode,
            Mode::VerifyCa,
            "libpq: a root certificate is checked"
        );

        let (_, settings) = split("postgres://h/db?sslmode=verify-ca&sslrootcert=system").unwrap();
        assert_eq!((settings.mode, settings.root_cert), (Mode::VerifyCa, None));

        let (rest, settings) = split("host=h sslmode=verify-full user=u").unwrap();
        assert_eq!(rest, "host=h user=u");
        assert_eq!(settings.mode, Mode::VerifyFull);

        assert!(split("postgres://h/db?sslmode=always").is_err());
    }
}
