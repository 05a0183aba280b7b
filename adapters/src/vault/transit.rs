//! Transit encrypt and decrypt with a named key under the slot's transit
//! mount (setting `transit_mount`, default `transit`): Vault holds the key,
//! the guest gets ciphertext or plaintext.
//!
//! Invariants:
//! - Plaintext is bounded by `max_secret_bytes`, ciphertext by what a
//!   plaintext of that size encrypts to; both are refused before any dial.
//! - The base64 plaintext this module builds (request) and decodes
//!   (answer) is wiped once used; the decrypted plaintext is charged as the
//!   request's staged output and wiped when dropped. Copies made inside
//!   rustify's serializer and serde's parser are beyond the adapter's reach.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use provider_pools_actors::{Bytes, ProviderPools, RunningRequest, StagedOutput};
use zeroize::{Zeroize, Zeroizing};

use crate::http_origin::HttpDialer;
use crate::vault::client::PoolClient;
use crate::vault::config::TransitKey;
use crate::vault::error::VaultError;
use crate::vault::exchange::Slot;
use crate::vault::sizes::max_ciphertext;
use crate::vault::wire;
use crate::vault::VaultLimits;

/// Encrypts `plaintext` with the transit key `key`; returns Vault's
/// ciphertext (`vault:vN:…`), which names the key version used.
///
/// # Cancel safety
///
/// As [`read`](super::read).
///
/// # Errors
///
/// [`VaultError::TooLarge`] (`plaintext` over `limits.max_secret_bytes`)
/// before any dial; a missing key is [`VaultError::NotFound`] or
/// [`VaultError::Rejected`] (Vault answers 400 for some); otherwise as
/// [`read`](super::read).
pub async fn encrypt(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    key: &TransitKey,
    plaintext: &[u8],
    limits: VaultLimits,
) -> Result<String, VaultError> {
    limits.check()?;
    VaultError::check_size("plaintext", plaintext.len(), limits.max_secret_bytes)?;
    let slot = Slot::of(running)?;
    let mut endpoint = wire::encrypt(&slot.transit_mount, key, STANDARD.encode(plaintext));
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    let encrypted = client.data(&endpoint).await;
    endpoint.plaintext.zeroize();
    Ok(encrypted?.ciphertext)
}

/// Decrypts `ciphertext` (`vault:vN:…`) with the transit key `key`; the
/// plaintext is charged to the request as staged output and wiped when
/// dropped.
///
/// # Cancel safety
///
/// As [`read`](super::read).
///
/// # Errors
///
/// [`VaultError::TooLarge`] and [`VaultError::InvalidInput`] (not Vault
/// ciphertext: printable ASCII starting `vault:v`) before any dial; a
/// ciphertext Vault cannot decrypt with this key is
/// [`VaultError::Rejected`] (400); [`VaultError::Staging`] when the
/// plaintext cannot be charged; otherwise as [`read`](super::read).
pub async fn decrypt(
    pools: &ProviderPools,
    running: &RunningRequest,
    dialer: &HttpDialer,
    key: &TransitKey,
    ciphertext: &str,
    limits: VaultLimits,
) -> Result<StagedOutput, VaultError> {
    limits.check()?;
    VaultError::check_size("ciphertext", ciphertext.len(), max_ciphertext(limits))?;
    let printable = ciphertext.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if !printable || !ciphertext.starts_with("vault:v") {
        return Err(VaultError::InvalidInput {
            input: "ciphertext",
            reason: "is not vault ciphertext (vault:vN:...)",
        });
    }
    let slot = Slot::of(running)?;
    let client = PoolClient::new(pools, running, dialer, &slot, limits);
    let decrypted = client
        .data(&wire::decrypt(&slot.transit_mount, key, ciphertext))
        .await?;
    drop(client);
    let encoded = Zeroizing::new(decrypted.plaintext);
    let plaintext = STANDARD
        .decode(encoded.as_bytes())
        .map_err(|_| VaultError::Protocol {
            phase: "decoding the plaintext",
        })?;
    running
        .stage_output(Bytes::from_owner(Zeroizing::new(plaintext)))
        .map_err(VaultError::Staging)
}
