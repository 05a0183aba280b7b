//! Vault's KV-v2 HTTP API as this adapter speaks it: what each operation
//! sends (method, origin-form path, JSON body) and the shapes of the
//! answers it reads.
//!
//! Invariants:
//! - A path is built only from a checked mount and a checked
//!   [`SecretPath`]: `/`-separated segments of `[A-Za-z0-9._-]`, so it
//!   never needs escaping and never leaves `/v1/{mount}/`.
//! - Nothing here holds or sees the token; headers are the exchange's.
//! - Response types name only the fields the adapter returns; anything
//!   else Vault sends is ignored.

use std::collections::BTreeMap;

use http::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::vault::config::SecretPath;
use crate::vault::error::VaultError;

/// One KV-v2 call: what goes on the wire, token and headers aside.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub(crate) method: Method,
    /// Origin-form: `/v1/{mount}/...`, with its query.
    pub(crate) path: String,
    /// The JSON body of a write; empty otherwise.
    pub(crate) body: Vec<u8>,
}

impl Endpoint {
    /// `GET /v1/{mount}/data/{path}`, with `?version=N` for a version.
    pub(crate) fn read(mount: &str, path: &SecretPath, version: Option<u64>) -> Self {
        let mut target = format!("/v1/{mount}/data/{path}");
        if let Some(version) = version {
            target.push_str(&format!("?version={version}"));
        }
        Self {
            method: Method::GET,
            path: target,
            body: Vec::new(),
        }
    }

    /// `POST /v1/{mount}/data/{path}` with `{"data": …, "options": {"cas": n}}`
    /// (no `options` without a check-and-set).
    ///
    /// # Errors
    ///
    /// [`VaultError::InvalidWrite`] when the body cannot be serialized.
    pub(crate) fn write(
        mount: &str,
        path: &SecretPath,
        data: Map<String, Value>,
        cas: Option<u32>,
    ) -> Result<Self, VaultError> {
        let body = WriteBody {
            data,
            options: cas.map(|cas| WriteOptions { cas }),
        };
        let body = serde_json::to_vec(&body).map_err(|_| VaultError::InvalidWrite {
            reason: "the data cannot be serialized",
        })?;
        Ok(Self {
            method: Method::POST,
            path: format!("/v1/{mount}/data/{path}"),
            body,
        })
    }

    /// `GET /v1/{mount}/metadata/{path}`.
    pub(crate) fn metadata(mount: &str, path: &SecretPath) -> Self {
        Self {
            method: Method::GET,
            path: format!("/v1/{mount}/metadata/{path}"),
            body: Vec::new(),
        }
    }
}

#[derive(Serialize)]
struct WriteBody {
    data: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<WriteOptions>,
}

#[derive(Serialize)]
struct WriteOptions {
    cas: u32,
}

/// Vault's response envelope: the answer is its `data`.
#[derive(Deserialize)]
struct Envelope<T> {
    data: Option<T>,
}

/// Vault's error body: `{"errors": [...]}`.
#[derive(Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub(crate) errors: Vec<String>,
}

/// A read's answer: the secret's data and its version's metadata.
#[derive(Deserialize)]
pub(crate) struct ReadAnswer {
    pub(crate) data: Value,
    pub(crate) metadata: VersionAnswer,
}

/// One version's metadata, as a read or a write answers it.
#[derive(Deserialize)]
pub(crate) struct VersionAnswer {
    pub(crate) version: u64,
    #[serde(default)]
    pub(crate) created_time: String,
    #[serde(default)]
    pub(crate) deletion_time: String,
    #[serde(default)]
    pub(crate) destroyed: bool,
}

/// A metadata read's answer.
#[derive(Deserialize)]
pub(crate) struct MetadataAnswer {
    pub(crate) current_version: u64,
    pub(crate) oldest_version: u64,
    #[serde(default)]
    pub(crate) created_time: String,
    #[serde(default)]
    pub(crate) updated_time: String,
    #[serde(default)]
    pub(crate) versions: BTreeMap<String, VersionStateAnswer>,
}

/// One version's state in a metadata answer.
#[derive(Deserialize)]
pub(crate) struct VersionStateAnswer {
    #[serde(default)]
    pub(crate) created_time: String,
    #[serde(default)]
    pub(crate) deletion_time: String,
    #[serde(default)]
    pub(crate) destroyed: bool,
}

/// The `data` of Vault's response envelope.
///
/// # Errors
///
/// [`VaultError::Protocol`] when the body is no such envelope.
pub(crate) fn envelope_data<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, VaultError> {
    serde_json::from_slice::<Envelope<T>>(body)
        .map_err(|_| VaultError::Protocol {
            phase: "parsing the response",
        })?
        .data
        .ok_or(VaultError::Protocol {
            phase: "reading the response's data",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> SecretPath {
        SecretPath::parse(text).expect("valid")
    }

    #[test]
    fn endpoints_name_the_kv_v2_paths() {
        let read = Endpoint::read("secret", &path("app/db"), None);
        assert_eq!(
            (read.method, read.path.as_str()),
            (Method::GET, "/v1/secret/data/app/db")
        );
        assert!(read.body.is_empty());
        let version = Endpoint::read("kv/team", &path("db"), Some(3));
        assert_eq!(version.path, "/v1/kv/team/data/db?version=3");
        let metadata = Endpoint::metadata("secret", &path("app/db"));
        assert_eq!(metadata.path, "/v1/secret/metadata/app/db");
    }

    #[test]
    fn a_write_sends_its_data_and_only_a_given_check_and_set() {
        let data: Map<String, Value> = [("k".to_owned(), Value::from("v"))].into_iter().collect();
        let plain = Endpoint::write("secret", &path("a"), data.clone(), None).expect("body");
        assert_eq!(plain.method, Method::POST);
        assert_eq!(plain.path, "/v1/secret/data/a");
        assert_eq!(plain.body, br#"{"data":{"k":"v"}}"#);
        let cas = Endpoint::write("secret", &path("a"), data, Some(0)).expect("body");
        assert_eq!(cas.body, br#"{"data":{"k":"v"},"options":{"cas":0}}"#);
    }

    #[test]
    fn answers_are_read_from_the_envelope() {
        let body = br#"{"request_id":"x","data":{"data":{"k":"v"},
            "metadata":{"version":2,"created_time":"t","deletion_time":"","destroyed":false,
            "custom_metadata":null}},"warnings":null}"#;
        let read: ReadAnswer = envelope_data(body).expect("read answer");
        assert_eq!(read.metadata.version, 2);
        assert_eq!(read.data["k"], "v");
        assert!(matches!(
            envelope_data::<ReadAnswer>(br#"{"data":null}"#),
            Err(VaultError::Protocol { .. })
        ));
        assert!(matches!(
            envelope_data::<ReadAnswer>(b"<html>"),
            Err(VaultError::Protocol { .. })
        ));
    }
}
