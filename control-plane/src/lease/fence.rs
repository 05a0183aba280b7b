//! [`FencingGate`]: the protected resource's side of fencing.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::lease::FencingToken;

/// Remembers the highest fencing token seen and refuses lower ones.
///
/// A write carrying a token lower than one already admitted comes from a
/// leader that lost its lease (a paused process, a partition); the gate
/// refuses it. Equal tokens pass: one leader writes many times.
///
/// ```
/// use provider_pools_control_plane::{FencingGate, FencingToken};
///
/// let gate = FencingGate::new();
/// gate.admit(FencingToken(7))?;
/// gate.admit(FencingToken(7))?;
/// let stale = gate.admit(FencingToken(6)).unwrap_err();
/// assert_eq!(stale.highest, FencingToken(7));
/// # Ok::<(), provider_pools_control_plane::StaleToken>(())
/// ```
#[derive(Debug, Default)]
pub struct FencingGate {
    highest: AtomicU64,
}

/// A token lower than the highest the gate has seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("fencing token {token} is lower than {highest}, already seen")]
pub struct StaleToken {
    /// The token refused.
    pub token: FencingToken,
    /// The highest token admitted so far.
    pub highest: FencingToken,
}

impl FencingGate {
    /// A gate that has seen no token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Admits `token` if it is at least the highest seen, and remembers it.
    ///
    /// # Errors
    ///
    /// [`StaleToken`] when a higher token was admitted before.
    pub fn admit(&self, token: FencingToken) -> Result<(), StaleToken> {
        let before = self.highest.fetch_max(token.get(), Ordering::AcqRel);
        if token.get() < before {
            return Err(StaleToken {
                token,
                highest: FencingToken(before),
            });
        }
        Ok(())
    }

    /// The highest token admitted, if any.
    pub fn highest(&self) -> Option<FencingToken> {
        match self.highest.load(Ordering::Acquire) {
            0 => None,
            token => Some(FencingToken(token)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_refuses_lower_tokens_and_keeps_the_highest_under_races() {
        let gate = std::sync::Arc::new(FencingGate::new());
        let threads: Vec<_> = (1..=8u64)
            .map(|thread| {
                let gate = gate.clone();
                std::thread::spawn(move || {
                    for token in (thread..=800).step_by(8) {
                        let _ = gate.admit(FencingToken(token));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no panic");
        }
        assert_eq!(gate.highest(), Some(FencingToken(800)));
        assert_eq!(
            gate.admit(FencingToken(799)),
            Err(StaleToken {
                token: FencingToken(799),
                highest: FencingToken(800)
            })
        );
        assert_eq!(gate.admit(FencingToken(800)), Ok(()));
    }
}
