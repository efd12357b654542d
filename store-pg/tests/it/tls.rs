//! TLS: the PostgreSQL of `scripts/postgres.sh` is built without SSL, so the tests put a TLS
//! terminator of their own in front of it on 127.0.0.1, which speaks PostgreSQL's opening
//! (`SSLRequest`, then `S`) and the handshake with a certificate for 127.0.0.1 that a CA made
//! here (openssl) signed, then relays to the real server. Each `sslmode` connects, or refuses,
//! as libpq's does.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use walkrag_engine::Store;
use walkrag_pgstore::PgStore;

use crate::server::{folder, fresh_schema, password, CORPUS};

/// A CA and a certificate for 127.0.0.1 it signed, in `dir`: `ca.crt`, `server.crt`,
/// `server.key`.
fn certificates(dir: &Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(&[
        &["req", "-x509", "-new"][..],
        &ec,
        &[
            "-subj",
            "/CN=walkrag test CA",
            "-days",
            "2",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ],
    ]
    .concat());
    run(&[
        &["req", "-new"][..],
        &ec,
        &[
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    ]
    .concat());
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
}

/// The TLS terminator: its port and the count of handshakes it completed.
fn terminator(
    dir: &Path,
    server_port: u16,
    runtime: &tokio::runtime::Runtime,
) -> (u16, Arc<AtomicUsize>) {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("server.crt"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let handshakes = Arc::new(AtomicUsize::new(0));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let counted = handshakes.clone();
    runtime.spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut opening = [0u8; 8];
                client.read_exact(&mut opening).await?;
                let mut upstream =
                    tokio::net::TcpStream::connect(("127.0.0.1", server_port)).await?;
                // SSLRequest: length 8, code 80877103.
                if opening == [0, 0, 0, 8, 4, 210, 22, 47] {
                    client.write_all(b"S").await?;
                    let mut tls = acceptor.accept(client).await?;
                    counted.fetch_add(1, Ordering::SeqCst);
                    tokio::io::copy_bidirectional(&mut tls, &mut upstream).await?;
                } else {
                    upstream.write_all(&opening).await?;
                    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
                }
                Ok::<(), std::io::Error>(())
            });
        }
    });
    (port, handshakes)
}

#[test]
fn each_sslmode_connects_or_refuses_as_libpq_does() {
    let url = fresh_schema("tls");
    let certs = tempfile::tempdir().unwrap();
    certificates(certs.path());
    let ca = certs.path().join("ca.crt").display().to_string();
    let server_port: u16 = url
        .split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|host| host.rsplit(':').next())
        .and_then(|port| port.parse().ok())
        .expect("the test URL has a port");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (port, handshakes) = terminator(certs.path(), server_port, &runtime);
    let through = url.replacen(
        &format!("127.0.0.1:{server_port}"),
        &format!("127.0.0.1:{port}"),
        1,
    );
    let (_dir, root) = folder(&[("corpus.jsonl", CORPUS)]);

    // verify-full: the chain to the given CA and the name 127.0.0.1 both checked.
    let full = PgStore::connect(&format!("{through}&sslmode=verify-full&sslrootcert={ca}"))
        .expect("verify-full with the CA that signed the certificate");
    full.update(
        &[root],
        crate::server::embedder(),
        "minilm",
        &Default::default(),
        &walkrag_engine::Quiet,
    )
    .expect("indexes over TLS");
    assert_eq!(full.documents().unwrap().len(), 3);
    assert!(handshakes.load(Ordering::SeqCst) >= 1);

    // require: encrypted, the certificate not checked (libpq's meaning).
    let before = handshakes.load(Ordering::SeqCst);
    let require = PgStore::connect(&format!("{through}&sslmode=require")).expect("require");
    assert_eq!(require.documents().unwrap().len(), 3);
    assert!(handshakes.load(Ordering::SeqCst) > before);

    // No sslmode: plain TCP, as before.
    let before = handshakes.load(Ordering::SeqCst);
    let plain = PgStore::connect(&through).unwrap();
    assert_eq!(plain.documents().unwrap().len(), 3);
    assert_eq!(
        handshakes.load(Ordering::SeqCst),
        before,
        "no TLS asked, none used"
    );

    // The CA made here is in no system bundle: verify-full without sslrootcert refuses.
    let refused = PgStore::connect(&format!("{through}&sslmode=verify-full"))
        .err()
        .expect("an unknown CA is refused")
        .to_string();
    assert!(
        refused.contains("certificate") || refused.contains("CA bundle"),
        "{refused}"
    );
    assert!(!refused.contains(&password()), "{refused}");

    // Another name for the same server: the certificate names 127.0.0.1 only.
    let by_name = through.replacen("127.0.0.1", "localhost", 1);
    let refused = PgStore::connect(&format!("{by_name}&sslmode=verify-full&sslrootcert={ca}"))
        .err()
        .expect("a certificate for another name is refused")
        .to_string();
    assert!(refused.contains("certificate"), "{refused}");
    assert!(!refused.contains(&password()), "{refused}");
    // verify-ca checks the chain, not the name.
    let chain_only = PgStore::connect(&format!("{by_name}&sslmode=verify-ca&sslrootcert={ca}"))
        .expect("verify-ca takes the right chain under another name");
    assert_eq!(chain_only.documents().unwrap().len(), 3);

    // A CA file that holds none.
    let refused = PgStore::connect(&format!(
        "{through}&sslmode=verify-full&sslrootcert={}",
        certs.path().join("server.ext").display()
    ))
    .err()
    .expect("no CA in the file")
    .to_string();
    assert!(refused.contains("sslrootcert"), "{refused}");
    assert!(!refused.contains(&password()), "{refused}");
}
