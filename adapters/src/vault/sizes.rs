//! The sizes a Vault exchange may reach under [`VaultLimits`]: the longest
//! ciphertext a plaintext of `max_secret_bytes` encrypts to, and the
//! largest request body, which carries at most one.

use crate::vault::VaultLimits;

/// Room for a request's JSON around the bounded input it carries (field
/// names, options, a key's settings), in bytes.
pub(crate) const REQUEST_ENVELOPE: usize = 4 * 1024;

/// The largest request body sent under `limits`.
pub(crate) fn max_request(limits: VaultLimits) -> usize {
    max_ciphertext(limits).saturating_add(REQUEST_ENVELOPE)
}

/// Room in a ciphertext beyond the base64 of its plaintext: the
/// `vault:vN:` prefix, the nonce and the tag.
const CIPHERTEXT_OVERHEAD: usize = 128;

/// The longest ciphertext accepted under `limits`: that of a plaintext of
/// `max_secret_bytes`.
pub(crate) fn max_ciphertext(limits: VaultLimits) -> usize {
    base64_len(limits.max_secret_bytes).saturating_add(CIPHERTEXT_OVERHEAD)
}

/// The length of `len` bytes in padded base64.
fn base64_len(len: usize) -> usize {
    len.div_ceil(3).saturating_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_size_plaintext_encrypts_to_an_accepted_ciphertext() {
        let limits = VaultLimits::default();
        // vault:v1: + base64(nonce 12 + ciphertext + tag 16)
        let largest = "vault:v1:".len() + base64_len(limits.max_secret_bytes + 28);
        assert!(largest <= max_ciphertext(limits));
        assert_eq!(base64_len(0), 0);
        assert_eq!(base64_len(4), 8);
    }
}
