//! Credential bytes: bounded, zeroized on drop, readable only by trusted adapter code.
//!
//! Invariants, one per line:
//! - A credential holds at most [`Credential::MAX_LEN`] bytes, in an allocation of exactly its length.
//! - Its bytes are zeroized when it is dropped.
//! - A source buffer given to [`Credential::new`] is zeroized before it returns, accepted or refused.
//! - It has no `Debug`, `Display`, `Clone` or `Serialize`, so its bytes cannot leak by formatting.
//! - [`CredentialError`] carries lengths only, never credential bytes.

use thiserror::Error;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// The absolute ceiling of copied private configuration bytes per epoch (1 MiB).
pub(crate) const MAX_LEN: usize = Credential::MAX_LEN;

/// Why credential bytes were refused. Never contains the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// The credential was longer than [`Credential::MAX_LEN`].
    #[error("credential is {len} bytes, more than {max}")]
    TooLarge {
        /// Length of the refused credential in bytes.
        len: usize,
        /// Largest accepted length in bytes.
        max: usize,
    },
}

/// Private credential bytes of one epoch: bounded, zeroized on drop, never formatted.
///
/// A struct holding a `Credential` must implement `Debug` by hand and leave it out.
#[allow(
    missing_debug_implementations,
    reason = "credential bytes must never be formatted"
)]
#[derive(ZeroizeOnDrop)]
pub struct Credential {
    bytes: Box<[u8]>,
}

impl Credential {
    /// The most bytes a credential holds.
    pub const MAX_LEN: usize = 1024 * 1024;

    /// Takes ownership of `bytes`, refusing more than [`Credential::MAX_LEN`].
    ///
    /// The vector is moved in when it has no spare capacity; otherwise its bytes
    /// are copied into an exact-size allocation. Either way, and also when the
    /// bytes are refused, nothing of `bytes` is left unzeroized. Copies made
    /// earlier (for example by the vector growing) are out of reach: build the
    /// vector with its final capacity.
    ///
    /// # Errors
    ///
    /// [`CredentialError::TooLarge`] if `bytes` is longer than [`Credential::MAX_LEN`].
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::Credential;
    ///
    /// let credential = Credential::new(b"s3cr3t".to_vec())?;
    /// assert_eq!(credential.len(), 6);
    /// assert!(Credential::new(vec![0; Credential::MAX_LEN + 1]).is_err());
    /// # Ok::<(), provider_pools_actors::CredentialError>(())
    /// ```
    pub fn new(mut bytes: Vec<u8>) -> Result<Self, CredentialError> {
        Self::take(&mut bytes)
    }

    /// Copies `bytes`, refusing more than [`Credential::MAX_LEN`]; the caller still owns,
    /// and should zeroize, the source.
    ///
    /// # Errors
    ///
    /// [`CredentialError::TooLarge`] if `bytes` is longer than [`Credential::MAX_LEN`].
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::Credential;
    ///
    /// let credential = Credential::from_slice(b"token")?;
    /// assert_eq!(credential.expose_to_adapter(), b"token");
    /// # Ok::<(), provider_pools_actors::CredentialError>(())
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Self, CredentialError> {
        check_len(bytes.len())?;
        Ok(Self {
            bytes: Box::from(bytes),
        })
    }

    /// A credential of no bytes, for providers that need none.
    ///
    /// # Examples
    ///
    /// ```
    /// use provider_pools_actors::Credential;
    ///
    /// assert!(Credential::empty().is_empty());
    /// ```
    pub fn empty() -> Self {
        Self {
            bytes: Box::default(),
        }
    }

    /// Number of credential bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the credential has no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The credential bytes: the only way to read them.
    ///
    /// Meant for trusted adapter code running inside the epoch that owns this
    /// credential. Never log, format, hash into a key or copy the result into
    /// anything that outlives the call without zeroizing it.
    pub fn expose_to_adapter(&self) -> &[u8] {
        &self.bytes
    }

    /// Moves or copies `source` into a credential, leaving `source` zeroized
    /// (or empty) on every path.
    fn take(source: &mut Vec<u8>) -> Result<Self, CredentialError> {
        if let Err(error) = check_len(source.len()) {
            wipe(source);
            return Err(error);
        }
        if source.len() == source.capacity() {
            // No spare capacity: `into_boxed_slice` keeps the allocation as is.
            let bytes = std::mem::take(source).into_boxed_slice();
            return Ok(Self { bytes });
        }
        let bytes = Box::from(source.as_slice());
        wipe(source);
        Ok(Self { bytes })
    }
}

fn check_len(len: usize) -> Result<(), CredentialError> {
    if len > MAX_LEN {
        return Err(CredentialError::TooLarge { len, max: MAX_LEN });
    }
    Ok(())
}

/// Zeroizes the whole allocation of `bytes`, spare capacity included, keeping its length.
fn wipe(bytes: &mut Vec<u8>) {
    bytes.as_mut_slice().zeroize();
    bytes.spare_capacity_mut().zeroize();
}

#[cfg(test)]
mod tests {
    use static_assertions::{assert_impl_all, assert_not_impl_any};
    use zeroize::ZeroizeOnDrop;

    use super::{Credential, CredentialError, MAX_LEN};

    assert_not_impl_any!(
        Credential: std::fmt::Debug,
        std::fmt::Display,
        Clone,
        serde::Serialize
    );
    assert_impl_all!(Credential: ZeroizeOnDrop, Send, Sync);

    #[test]
    fn accepts_exactly_max_len() {
        let credential = Credential::new(vec![7; MAX_LEN]).expect("MAX_LEN fits");
        assert_eq!(credential.len(), MAX_LEN);
        assert!(credential.expose_to_adapter().iter().all(|byte| *byte == 7));
        assert_eq!(
            Credential::from_slice(&[7; MAX_LEN])
                .expect("MAX_LEN fits")
                .len(),
            MAX_LEN
        );
    }

    #[test]
    fn refuses_max_len_plus_one() {
        let expected = CredentialError::TooLarge {
            len: MAX_LEN + 1,
            max: MAX_LEN,
        };
        let refused = Credential::new(vec![7; MAX_LEN + 1]).map(|_| ());
        assert_eq!(refused, Err(expected.clone()));
        let refused = Credential::from_slice(&vec![7; MAX_LEN + 1]).map(|_| ());
        assert_eq!(refused, Err(expected.clone()));
        assert_eq!(
            expected.to_string(),
            "credential is 1048577 bytes, more than 1048576"
        );
    }

    #[test]
    fn refused_source_is_zeroized() {
        let mut source = vec![0xA5; MAX_LEN + 1];
        assert!(Credential::take(&mut source).is_err());
        assert_eq!(source.len(), MAX_LEN + 1);
        assert!(source.iter().all(|byte| *byte == 0));
    }

    #[test]
    fn copied_source_is_zeroized() {
        let mut source = Vec::with_capacity(64);
        source.extend_from_slice(b"abc");
        let credential = Credential::take(&mut source).expect("3 bytes fit");
        assert_eq!(credential.expose_to_adapter(), b"abc");
        assert_eq!(source, [0, 0, 0]);
    }

    #[test]
    fn exact_source_is_moved() {
        let mut source = b"abc".to_vec();
        source.shrink_to_fit();
        let address = source.as_ptr();
        let credential = Credential::take(&mut source).expect("3 bytes fit");
        assert_eq!(credential.expose_to_adapter().as_ptr(), address);
        assert!(source.is_empty());
    }

    #[test]
    fn expose_returns_the_bytes() {
        let credential = Credential::new(b"s3cr3t".to_vec()).expect("6 bytes fit");
        assert_eq!(credential.expose_to_adapter(), b"s3cr3t");
        assert_eq!(credential.len(), 6);
        assert!(!credential.is_empty());
    }

    #[test]
    fn empty_is_allowed() {
        assert!(Credential::empty().is_empty());
        assert!(Credential::new(Vec::new()).expect("empty fits").is_empty());
        assert_eq!(Credential::from_slice(&[]).expect("empty fits").len(), 0);
    }
}
