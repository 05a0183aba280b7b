//! How an epoch's credential authenticates a NATS client, and why a client
//! connects exactly once.
//!
//! The credential bytes are, by the provider setting `auth`
//! ([`AUTH_SETTING`]):
//! - `token` (the default): a token (`authorization { token }` or
//!   `--auth`); empty bytes mean no authentication;
//! - `user_password`: `user:password`, split at the first `:`.
//!
//! Invariants:
//! - The credential is copied once per dial into a zeroizing buffer owned
//!   by the client's auth callback, and never into an error, a log line or
//!   `Debug` output. (async-nats builds its CONNECT message from a plain
//!   copy that lives for the handshake only.)
//! - The callback hands out the credential for the first connect only. A
//!   reconnect the client would attempt after a disconnect fails at its own
//!   authentication step, before anything is sent, and with
//!   `max_reconnects(1)` the client's connection handler then stops: the
//!   pools never see a session re-established behind their back.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use async_nats::{Auth, AuthError};
use provider_pools_actors::{Credential, DialError, DialErrorKind};
use zeroize::Zeroizing;

/// The provider setting choosing how the credential authenticates:
/// `token` (default) or `user_password`.
pub const AUTH_SETTING: &str = "auth";

/// The credential, parsed for one client.
pub(crate) enum ClientAuth {
    None,
    Token(Zeroizing<String>),
    UserPassword {
        user: Zeroizing<String>,
        password: Zeroizing<String>,
    },
}

impl ClientAuth {
    /// Reads the credential as the `auth` setting says.
    ///
    /// # Errors
    ///
    /// An [`DialErrorKind::Other`] dial error with a fixed message when
    /// the setting is unknown or the credential does not fit it.
    pub(crate) fn from_credential(
        credential: &Credential,
        settings: &BTreeMap<String, String>,
    ) -> Result<Self, DialError> {
        let bytes = credential.expose_to_adapter();
        let scheme = settings.get(AUTH_SETTING).map_or("token", String::as_str);
        if !matches!(scheme, "token" | "user_password") {
            return Err(refused("setting `auth` must be token or user_password"));
        }
        if bytes.is_empty() {
            return Ok(Self::None);
        }
        let text = Zeroizing::new(
            std::str::from_utf8(bytes)
                .map_err(|_| refused("the credential is not utf-8"))?
                .to_owned(),
        );
        if scheme == "token" {
            return Ok(Self::Token(text));
        }
        let (user, password) = text
            .split_once(':')
            .ok_or_else(|| refused("a user_password credential must be user:password"))?;
        if user.is_empty() {
            return Err(refused("a user_password credential names no user"));
        }
        Ok(Self::UserPassword {
            user: Zeroizing::new(user.to_owned()),
            password: Zeroizing::new(password.to_owned()),
        })
    }

    fn to_auth(&self) -> Auth {
        let mut auth = Auth::new();
        match self {
            Self::None => {}
            Self::Token(token) => auth.token = Some(token.as_str().to_owned()),
            Self::UserPassword { user, password } => {
                auth.username = Some(user.as_str().to_owned());
                auth.password = Some(password.as_str().to_owned());
            }
        }
        auth
    }
}

/// The client's auth callback: the credential for the first connect, a
/// refusal for any later one.
pub(crate) fn connect_once(
    auth: ClientAuth,
) -> impl Fn(Vec<u8>) -> std::future::Ready<Result<Auth, AuthError>> + Send + Sync + 'static {
    let used = AtomicBool::new(false);
    move |_nonce| {
        let answer = if used.swap(true, Ordering::AcqRel) {
            Err(AuthError::new(
                "this client connects once; reconnects are refused",
            ))
        } else {
            Ok(auth.to_auth())
        };
        std::future::ready(answer)
    }
}

fn refused(message: &'static str) -> DialError {
    DialError::new(DialErrorKind::Other, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(scheme: Option<&str>) -> BTreeMap<String, String> {
        scheme
            .map(|s| (AUTH_SETTING.to_owned(), s.to_owned()))
            .into_iter()
            .collect()
    }

    fn credential(bytes: &[u8]) -> Credential {
        Credential::from_slice(bytes).expect("bounded")
    }

    #[test]
    fn token_is_the_default_and_empty_means_none() {
        let auth =
            ClientAuth::from_credential(&credential(b"s3cret"), &settings(None)).expect("token");
        let built = auth.to_auth();
        assert_eq!(built.token.as_deref(), Some("s3cret"));
        assert!(built.username.is_none());
        let none = ClientAuth::from_credential(&credential(b""), &settings(None)).expect("none");
        assert!(none.to_auth().token.is_none());
    }

    #[test]
    fn user_password_splits_at_the_first_colon() {
        let auth = ClientAuth::from_credential(
            &credential(b"alice:pa:ss"),
            &settings(Some("user_password")),
        )
        .expect("user and password");
        let built = auth.to_auth();
        assert_eq!(built.username.as_deref(), Some("alice"));
        assert_eq!(built.password.as_deref(), Some("pa:ss"));
    }

    #[test]
    fn refusals_never_show_the_credential() {
        for (bytes, scheme) in [
            (&b"no-colon-secret"[..], Some("user_password")),
            (&b":secret"[..], Some("user_password")),
            (&b"\xffsecret"[..], None),
            (&b"secret"[..], Some("jwt")),
        ] {
            let Err(e) = ClientAuth::from_credential(&credential(bytes), &settings(scheme)) else {
                panic!("accepted {scheme:?}");
            };
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[tokio::test]
    async fn the_credential_is_handed_out_for_the_first_connect_only() {
        let callback = connect_once(ClientAuth::Token(Zeroizing::new("t".to_owned())));
        let first = callback(Vec::new()).await.expect("first connect");
        assert_eq!(first.token.as_deref(), Some("t"));
        assert!(
            callback(Vec::new()).await.is_err(),
            "a reconnect is refused"
        );
    }
}
