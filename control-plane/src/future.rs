//! [`BoxFuture`], the future every call of the control plane returns: the
//! client trait's and the transports' alike.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: the trait stays object safe, so hosts can hold
/// an `Arc<dyn ControlPlane>` chosen at start-up.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
