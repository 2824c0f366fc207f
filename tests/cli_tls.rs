//! The CLI over HTTPS with a private CA: the real server behind a TLS front on loopback whose
//! certificate a CA made in the test signed. The CLI trusts the system's store as well as the
//! bundled web roots, so `SSL_CERT_FILE` naming that CA (as on a machine that trusts it) is
//! enough; without it the certificate is refused.

mod common;

use common::{Server, TempDir};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;

/// A CA, and a certificate for `127.0.0.1` and `localhost` it signed with its key.
struct Pki {
    ca_pem: String,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "better-compute test CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);

    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    params.use_authority_key_identifier_extension = true;
    params
        .extended_key_usages
        .push(rcgen::ExtendedKeyUsagePurpose::ServerAuth);
    let cert = params.signed_by(&key, &issuer).unwrap();
    Pki {
        ca_pem: ca_cert.pem(),
        cert: cert.der().clone(),
        key: PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
    }
}

/// A TLS front on a loopback port for `backend`, one request per connection, as a reverse
/// proxy terminating TLS would be; answers its URL.
fn tls_front(pki: &Pki, backend: std::net::SocketAddr) -> String {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![pki.cert.clone()], pki.key.clone_key())
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    // Serves until the test process ends.
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { continue };
            let config = Arc::clone(&config);
            std::thread::spawn(move || {
                let connection = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(connection, tcp);
                // A refused handshake ends here: the client said why.
                let Some(request) = common::read_http_message(&mut tls) else {
                    return;
                };
                let mut upstream = TcpStream::connect(backend).unwrap();
                upstream.write_all(&request).unwrap();
                let Some(answer) = common::read_http_message(&mut upstream) else {
                    return;
                };
                // One request per connection: the client must not reuse it.
                let status_end = answer.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
                let _ = tls.write_all(&answer[..status_end]);
                let _ = tls.write_all(b"connection: close\r\n");
                let _ = tls.write_all(&answer[status_end..]);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    url
}

#[test]
fn a_private_ca_in_ssl_cert_file_is_trusted() {
    let dir = TempDir::new("cli-tls");
    let key_file = dir.path().join("admin.key");
    let server = Server::start([
        "--database".to_owned(),
        format!("sqlite://{}", dir.path().join("fleet.db").display()),
        "--admin-key-file".to_owned(),
        key_file.display().to_string(),
    ]);
    let key = std::fs::read_to_string(&key_file).unwrap();
    let pki = pki();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &pki.ca_pem).unwrap();
    let url = tls_front(&pki, server.addr());

    let run = |trust: bool| {
        let mut command = Command::new(common::binary());
        command
            .args(["fleet", "status", "--tenant", "root", "--url", &url])
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("BETTER_COMPUTE_URL")
            .env_remove("SSL_CERT_DIR")
            .env("BETTER_COMPUTE_TOKEN", &key);
        if trust {
            command.env("SSL_CERT_FILE", &ca_file);
        } else {
            command.env_remove("SSL_CERT_FILE");
        }
        let output = command.output().unwrap();
        (
            output.status.code().unwrap(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    // Not trusted: the certificate is refused, before anything is sent.
    let (code, _, stderr) = run(false);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: cannot reach {url}: ")),
        "{stderr}"
    );
    // The CA in SSL_CERT_FILE, as a machine that trusts it has it.
    let (code, stdout, stderr) = run(true);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "Tenant root has never applied a document: there is nothing to check drift against.\n"
    );
}
