//! The adapters' face of the shared trust anchors
//! ([`provider_pools_tls_roots`]) for the TLS-speaking adapters (`http` for
//! `https`, `nats` for `tls://`): the provider setting `ca_file`, read when
//! a dial needs it, as a [`DialError`].
//!
//! Invariants:
//! - A `ca_file` replaces the default roots; it is read when a dial needs
//!   it, so a rotated epoch with a rewritten file is trusted afresh.
//! - A `ca_file` must be an absolute path; its size and contents follow
//!   [`provider_pools_tls_roots::read_roots`].
//! - Errors name the setting and the failing step, never the file's contents.

use std::collections::BTreeMap;
use std::path::Path;

use provider_pools_actors::{DialError, DialErrorKind};
use rustls::RootCertStore;

/// The provider setting naming a PEM bundle of trust anchors that replaces
/// the default roots (an absolute path).
pub const CA_FILE_SETTING: &str = "ca_file";

/// The trust anchors of one dial: `ca_file`'s when the epoch sets it,
/// `None` for the bundled default roots.
///
/// Reads the file synchronously: it is a small local file, read only when a
/// connection is dialed.
///
/// # Errors
///
/// [`DialErrorKind::Handshake`], naming the setting, when `ca_file` is not
/// absolute, cannot be read, is too large or holds no usable certificate.
pub(crate) fn configured_roots(
    settings: &BTreeMap<String, String>,
) -> Result<Option<RootCertStore>, DialError> {
    settings
        .get(CA_FILE_SETTING)
        .map(|path| read_roots(Path::new(path)))
        .transpose()
}

/// Reads and parses the `ca_file` bundle, which must be named by an
/// absolute path.
fn read_roots(path: &Path) -> Result<RootCertStore, DialError> {
    if !path.is_absolute() {
        return Err(ca_error(&"is not an absolute path"));
    }
    provider_pools_tls_roots::read_roots(path).map_err(|e| ca_error(&e))
}

fn ca_error(what: &dyn std::fmt::Display) -> DialError {
    DialError::new(
        DialErrorKind::Handshake,
        format!("the file named by setting `{CA_FILE_SETTING}` {what}"),
    )
}
