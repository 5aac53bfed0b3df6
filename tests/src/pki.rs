//! The certificates of the tests that reach a group's services over TLS, made at run time
//! and written to a directory of their own as an operator's files are: a CA, a server
//! certificate it signed for `localhost` (and no other name, so that `127.0.0.1` is a host
//! name the certificate is not for), a client certificate it signed, and a second CA that
//! signed none of them. No key or certificate is kept in the repository.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};

/// The files, in a temporary directory removed when dropped.
#[derive(Debug)]
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    /// Makes them: `ca.pem`; `server.pem` and `server.key` (for `localhost`); `client.pem`
    /// and `client.key`; `other-ca.pem`.
    ///
    /// # Panics
    /// When a key or certificate cannot be made or written.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a directory for the certificates");
        let ca = authority("sluice test CA");
        write(dir.path(), "ca.pem", &ca.0);
        write(
            dir.path(),
            "other-ca.pem",
            &authority("sluice test CA, another").0,
        );
        for (name, host, usage) in [
            ("server", "localhost", ExtendedKeyUsagePurpose::ServerAuth),
            ("client", "sluice-host", ExtendedKeyUsagePurpose::ClientAuth),
        ] {
            let key = KeyPair::generate().expect("a key");
            let mut params = CertificateParams::new(vec![host.to_owned()]).expect("names");
            params.distinguished_name.push(DnType::CommonName, host);
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &ca.1).expect("a signed certificate");
            write(dir.path(), &format!("{name}.pem"), &cert.pem());
            write(dir.path(), &format!("{name}.key"), &key.serialize_pem());
        }
        Self { dir }
    }

    /// The file `name` (`ca.pem`, `server.key`, …).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

/// A self-signed CA named `name`: its certificate (PEM), and the issuer that signs with it.
fn authority(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().expect("a key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("no names");
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).expect("a CA certificate");
    (cert.pem(), Issuer::new(params, key))
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("a certificate file written");
}
