//! In-memory connections whose dial, exchange and graceful close each wait
//! on a gate the case resolves, and whose destruction is counted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use provider_pools::{Cleanup, CloseFailure, DialError, DialErrorKind, DialTarget, Dialer};

use crate::Wait;

/// An in-memory connection: its exchange and its graceful close wait on a
/// gate; its destruction is counted.
pub(crate) struct MemConn {
    pub(crate) gate: Option<Wait>,
    destroyed: Arc<AtomicUsize>,
}

impl Drop for MemConn {
    fn drop(&mut self) {
        self.destroyed.fetch_add(1, Ordering::SeqCst);
    }
}

impl Cleanup for MemConn {
    async fn close(mut self) -> Result<(), CloseFailure<Self>> {
        let closed = match self.gate.take() {
            Some(gate) => gate.outcome().await,
            None => true,
        };
        if closed {
            Ok(())
        } else {
            Err(CloseFailure::new(self, "close refused"))
        }
    }
}

/// Dials [`MemConn`]s: the dial itself may wait on a gate, and the
/// connection it opens may carry one.
#[derive(Default, Clone)]
pub(crate) struct MemDialer {
    dial: Arc<Mutex<Option<Wait>>>,
    conn: Arc<Mutex<Option<Wait>>>,
    destroyed: Arc<AtomicUsize>,
}

impl MemDialer {
    pub(crate) fn dial_waits(gate: Wait) -> Self {
        Self {
            dial: Arc::new(Mutex::new(Some(gate))),
            ..Self::default()
        }
    }

    pub(crate) fn conn_waits(gate: Wait) -> Self {
        Self {
            conn: Arc::new(Mutex::new(Some(gate))),
            ..Self::default()
        }
    }

    pub(crate) fn destroyed(&self) -> usize {
        self.destroyed.load(Ordering::SeqCst)
    }
}

impl Dialer for MemDialer {
    type Conn = MemConn;

    async fn dial(&self, _: DialTarget<'_>) -> Result<MemConn, DialError> {
        let gate = self.dial.lock().expect("dialer").take();
        if let Some(gate) = gate {
            if !gate.outcome().await {
                return Err(DialError::new(DialErrorKind::Refused, "refused"));
            }
        }
        Ok(MemConn {
            gate: self.conn.lock().expect("dialer").take(),
            destroyed: Arc::clone(&self.destroyed),
        })
    }
}
