//! The vaultrs endpoints each operation runs (`vaultrs::api::kv2` and
//! `vaultrs::api::transit` request types), built only from checked
//! input, and Vault's error body.
//!
//! Invariants:
//! - A path is built only from a checked mount and a checked
//!   [`SecretPath`] or [`TransitKey`]: `/`-separated segments of
//!   `[A-Za-z0-9._-]`, so it never needs escaping and never leaves
//!   `/v1/{mount}/`.
//! - Nothing here holds or sees the token; headers are the exchange's.
//! - vaultrs's request types derive `Debug` over their fields (secret data,
//!   plaintext): they are built here, run, and dropped, never formatted.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use vaultrs::api::kv2::requests::{
    DeleteLatestSecretVersionRequest, DeleteSecretVersionsRequest, DestroySecretVersionsRequest,
    ListSecretsRequest, ReadSecretMetadataRequest, ReadSecretRequest, SetSecretMetadataRequest,
    SetSecretRequest, SetSecretRequestOptions, UndeleteSecretVersionsRequest,
};
use vaultrs::api::transit::requests::{DecryptDataRequest, EncryptDataRequest};

use crate::vault::config::TransitKey;
use crate::vault::path::SecretPath;

/// Vault's error body: `{"errors": [...]}`.
#[derive(Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub(crate) errors: Vec<String>,
}

/// `GET /v1/{mount}/data/{path}`, with `?version=N` for a version.
pub(crate) fn read(mount: &str, path: &SecretPath, version: Option<u64>) -> ReadSecretRequest {
    ReadSecretRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
        version,
    }
}

/// `POST /v1/{mount}/data/{path}` with `{"data": …, "options": {"cas": n}}`
/// (no `options` without a check-and-set).
pub(crate) fn write(
    mount: &str,
    path: &SecretPath,
    data: Map<String, Value>,
    cas: Option<u32>,
) -> SetSecretRequest {
    SetSecretRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
        data: Value::Object(data),
        options: cas.map(|cas| SetSecretRequestOptions { cas }),
    }
}

/// `GET /v1/{mount}/metadata/{path}`.
pub(crate) fn metadata(mount: &str, path: &SecretPath) -> ReadSecretMetadataRequest {
    ReadSecretMetadataRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
    }
}

/// `LIST /v1/{mount}/metadata/{folder}` (the mount's root without one).
pub(crate) fn list(mount: &str, folder: Option<&SecretPath>) -> ListSecretsRequest {
    ListSecretsRequest {
        mount: mount.to_owned(),
        path: folder.map(|f| f.as_str().to_owned()).unwrap_or_default(),
    }
}

/// `DELETE /v1/{mount}/data/{path}`: soft-deletes the latest version.
pub(crate) fn delete_latest(mount: &str, path: &SecretPath) -> DeleteLatestSecretVersionRequest {
    DeleteLatestSecretVersionRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
    }
}

/// `POST /v1/{mount}/delete/{path}` with `{"versions": [...]}`.
pub(crate) fn delete_versions(
    mount: &str,
    path: &SecretPath,
    versions: Vec<u64>,
) -> DeleteSecretVersionsRequest {
    DeleteSecretVersionsRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
        versions,
    }
}

/// `POST /v1/{mount}/undelete/{path}` with `{"versions": [...]}`.
pub(crate) fn undelete(
    mount: &str,
    path: &SecretPath,
    versions: Vec<u64>,
) -> UndeleteSecretVersionsRequest {
    UndeleteSecretVersionsRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
        versions,
    }
}

/// `POST /v1/{mount}/destroy/{path}` with `{"versions": [...]}`.
pub(crate) fn destroy(
    mount: &str,
    path: &SecretPath,
    versions: Vec<u64>,
) -> DestroySecretVersionsRequest {
    DestroySecretVersionsRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
        versions,
    }
}

/// `POST /v1/{mount}/metadata/{path}` with the settings given (fields left
/// out are left unchanged).
pub(crate) fn update_metadata(
    mount: &str,
    path: &SecretPath,
    max_versions: Option<u64>,
    cas_required: Option<bool>,
    delete_version_after: Option<String>,
    custom_metadata: Option<HashMap<String, String>>,
) -> SetSecretMetadataRequest {
    SetSecretMetadataRequest {
        mount: mount.to_owned(),
        path: path.as_str().to_owned(),
        max_versions,
        cas_required,
        delete_version_after,
        custom_metadata,
    }
}

/// `POST /v1/{mount}/encrypt/{key}` with `{"plaintext": base64}`.
pub(crate) fn encrypt(mount: &str, key: &TransitKey, plaintext: String) -> EncryptDataRequest {
    EncryptDataRequest {
        mount: mount.to_owned(),
        name: key.as_str().to_owned(),
        plaintext,
        ..EncryptDataRequest::default()
    }
}

/// `POST /v1/{mount}/decrypt/{key}` with `{"ciphertext": "vault:v…"}`.
pub(crate) fn decrypt(mount: &str, key: &TransitKey, ciphertext: &str) -> DecryptDataRequest {
    DecryptDataRequest {
        mount: mount.to_owned(),
        name: key.as_str().to_owned(),
        ciphertext: ciphertext.to_owned(),
        ..DecryptDataRequest::default()
    }
}

#[cfg(test)]
mod tests {
    use http::Method;
    use rustify::endpoint::Endpoint;

    use super::*;

    const BASE: &str = "http://127.0.0.1:8200/v1";

    fn path(text: &str) -> SecretPath {
        SecretPath::parse(text).expect("valid")
    }

    /// Method, origin-form target and body of `endpoint`, as rustify
    /// builds them.
    fn wire(endpoint: &impl Endpoint) -> (Method, String, String) {
        let request = endpoint.request(BASE).expect("request");
        // As the client sends it: without the `?` of an empty query.
        let target = request
            .uri()
            .path_and_query()
            .map(|p| p.as_str().trim_end_matches('?').to_owned())
            .unwrap_or_default();
        let body = String::from_utf8(request.body().clone()).expect("utf-8");
        (request.method().clone(), target, body)
    }

    #[test]
    fn kv_v2_endpoints_name_their_paths() {
        let get = |target: &str| (Method::GET, target.to_owned(), String::new());
        assert_eq!(
            wire(&read("secret", &path("app/db"), None)),
            get("/v1/secret/data/app/db")
        );
        assert_eq!(
            wire(&read("kv/team", &path("db"), Some(3))),
            get("/v1/kv/team/data/db?version=3")
        );
        assert_eq!(
            wire(&metadata("secret", &path("app/db"))),
            get("/v1/secret/metadata/app/db")
        );
        let list_method = Method::from_bytes(b"LIST").expect("method");
        assert_eq!(
            wire(&list("secret", Some(&path("app")))),
            (
                list_method.clone(),
                "/v1/secret/metadata/app".to_owned(),
                String::new()
            )
        );
        assert_eq!(wire(&list("secret", None)).1, "/v1/secret/metadata/");
        assert_eq!(
            wire(&delete_latest("secret", &path("a"))),
            (
                Method::DELETE,
                "/v1/secret/data/a".to_owned(),
                String::new()
            )
        );
        for (endpoint, verb) in [
            (
                wire(&delete_versions("secret", &path("a"), vec![1, 2])),
                "delete",
            ),
            (
                wire(&undelete("secret", &path("a"), vec![1, 2])),
                "undelete",
            ),
            (wire(&destroy("secret", &path("a"), vec![1, 2])), "destroy"),
        ] {
            assert_eq!(
                endpoint,
                (
                    Method::POST,
                    format!("/v1/secret/{verb}/a"),
                    r#"{"versions":[1,2]}"#.to_owned()
                )
            );
        }
    }

    #[test]
    fn a_write_sends_its_data_and_only_a_given_check_and_set() {
        let data: Map<String, Value> = [("k".to_owned(), Value::from("v"))].into_iter().collect();
        let plain = wire(&write("secret", &path("a"), data.clone(), None));
        assert_eq!(
            plain,
            (
                Method::POST,
                "/v1/secret/data/a".to_owned(),
                r#"{"data":{"k":"v"}}"#.to_owned()
            )
        );
        let cas = wire(&write("secret", &path("a"), data, Some(0)));
        assert_eq!(cas.2, r#"{"data":{"k":"v"},"options":{"cas":0}}"#);
    }

    #[test]
    fn a_metadata_update_sends_only_what_it_changes() {
        let only = wire(&update_metadata(
            "secret",
            &path("a"),
            Some(3),
            None,
            None,
            None,
        ));
        assert_eq!(
            only,
            (
                Method::POST,
                "/v1/secret/metadata/a".to_owned(),
                r#"{"max_versions":3}"#.to_owned()
            )
        );
    }

    #[test]
    fn transit_endpoints_name_the_key() {
        let key = TransitKey::parse("app-key").expect("key");
        assert_eq!(
            wire(&encrypt("transit", &key, "aGk=".to_owned())),
            (
                Method::POST,
                "/v1/transit/encrypt/app-key".to_owned(),
                r#"{"plaintext":"aGk="}"#.to_owned()
            )
        );
        assert_eq!(
            wire(&decrypt("transit", &key, "vault:v1:abc")),
            (
                Method::POST,
                "/v1/transit/decrypt/app-key".to_owned(),
                r#"{"ciphertext":"vault:v1:abc"}"#.to_owned()
            )
        );
    }
}
