//! What the cleanup actor destroys: any owned resource that can be closed,
//! and that hands itself back, still owned, when closing fails.

use std::fmt;
use std::future::Future;

/// A resource the cleanup actor can destroy.
///
/// `close` consumes the resource. On success the resource no longer exists
/// when the future completes, and only then is its charge released. On
/// failure the resource comes back in [`CloseFailure`], still owned, so that
/// its charge is kept: a failed close never invents a refund.
///
/// An implementation may be a plain `async fn`:
///
/// ```
/// use provider_pools_actors::{Cleanup, CloseFailure};
///
/// struct Socket {
///     healthy: bool,
/// }
///
/// impl Cleanup for Socket {
///     async fn close(self) -> Result<(), CloseFailure<Self>> {
///         if self.healthy {
///             drop(self); // the real teardown goes here
///             Ok(())
///         } else {
///             Err(CloseFailure::new(self, "peer did not acknowledge the close"))
///         }
///     }
/// }
/// ```
pub trait Cleanup: Send + Sized + 'static {
    /// Destroys the resource, or hands it back with the reason it could
    /// not be destroyed. The reason must not contain credential bytes.
    ///
    /// # Cancel safety
    ///
    /// The cleanup actor runs this future on its own task to completion and
    /// never aborts it (a timed-out `when_idle` aborts nothing). It is
    /// dropped early only when the runtime shuts down; it must then drop —
    /// and so release — whatever it still owns.
    ///
    /// # Errors
    ///
    /// [`CloseFailure`] carrying the resource, still owned, and the reason
    /// it could not be destroyed; its charge is kept with it.
    fn close(self) -> impl Future<Output = Result<(), CloseFailure<Self>>> + Send + 'static;
}

/// A close that failed: the resource, still owned, and why.
pub struct CloseFailure<T> {
    /// The resource that could not be destroyed.
    pub resource: T,
    /// Why, for logs and the caller; never credential bytes.
    pub reason: String,
}

impl<T> CloseFailure<T> {
    /// The failure of closing `resource`, for `reason`.
    pub fn new(resource: T, reason: impl Into<String>) -> Self {
        Self {
            resource,
            reason: reason.into(),
        }
    }
}

impl<T> fmt::Debug for CloseFailure<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloseFailure")
            .field("resource", &std::any::type_name::<T>())
            .field("reason", &self.reason)
            .finish()
    }
}
