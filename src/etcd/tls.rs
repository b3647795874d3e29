//! TLS settings from PEM files, through rustls (ring's primitives): no
//! cryptography of our own.

use super::Error;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use std::path::Path;
use std::sync::Arc;

/// Where Debian and most distributions keep the system's trusted CAs, used
/// when no CA file is given (as Go uses the system's roots).
const SYSTEM_CAS: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

fn config_error(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Config(format!("{what} {}: {e}", path.display()))
}

/// The client settings: `ca` (else the system's CAs) as roots, and the
/// client certificate and key when both are given.
pub(super) fn client_config(
    ca: Option<&Path>,
    client: Option<(&Path, &Path)>,
) -> Result<Arc<ClientConfig>, Error> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| config_error("CA file", path, e))?;
            for cert in certs {
                let cert = cert.map_err(|e| config_error("CA file", path, e))?;
                roots
                    .add(cert)
                    .map_err(|e| config_error("CA file", path, e))?;
            }
        }
        None => {
            for path in SYSTEM_CAS {
                if let Ok(iter) = CertificateDer::pem_file_iter(path) {
                    roots.add_parsable_certificates(iter.flatten());
                    break;
                }
            }
        }
    }
    if roots.is_empty() {
        return Err(Error::Config(match ca {
            Some(p) => format!("CA file {}: no certificate", p.display()),
            None => "no CA file given and no system CA bundle found".to_string(),
        }));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .map_err(|e| config_error("certificate file", cert, e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| config_error("certificate file", cert, e))?;
            if chain.is_empty() {
                return Err(config_error("certificate file", cert, "no certificate"));
            }
            let key =
                PrivateKeyDer::from_pem_file(key).map_err(|e| config_error("key file", key, e))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| Error::Config(format!("client certificate and key: {e}")))?
        }
    };
    Ok(Arc::new(config))
}
