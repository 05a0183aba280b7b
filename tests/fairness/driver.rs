//! The fairness tests' driver: queued requests that report their grant
//! and hold it until the test releases it, and the set-up that installs the
//! providers and blocks the running slots.

use provider_pools::{ExecutionPlan, InstallReceipt, PoolReady, ProviderPools};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use crate::support::{admitted, bounded, http_config, installation, plan, provider, request};

/// A queued request that reports its grant and holds it until released.
pub(crate) struct Requests {
    granted: mpsc::Receiver<(usize, oneshot::Sender<()>)>,
    granted_tx: mpsc::Sender<(usize, oneshot::Sender<()>)>,
    pub(crate) tasks: JoinSet<()>,
}

impl Requests {
    pub(crate) fn new() -> Self {
        let (granted_tx, granted) = mpsc::channel(4_096);
        Self {
            granted,
            granted_tx,
            tasks: JoinSet::new(),
        }
    }

    /// Queues a request tagged `tag`.
    pub(crate) fn queue(
        &mut self,
        pools: &ProviderPools,
        plan: ExecutionPlan,
        receipt: &InstallReceipt,
        tag: usize,
    ) {
        let (pools, granted) = (pools.clone(), self.granted_tx.clone());
        let request = request(&pools, plan, receipt, b"in");
        self.tasks.spawn(async move {
            let ready = pools
                .admit(request)
                .await
                .expect("granted before its deadline");
            let (release, released) = oneshot::channel();
            granted
                .send((tag, release))
                .await
                .expect("driver listening");
            let _ = released.await;
            drop(ready);
        });
    }

    /// Waits for the next grant.
    pub(crate) async fn next(&mut self) -> (usize, oneshot::Sender<()>) {
        bounded("next grant", self.granted.recv())
            .await
            .expect("a request was granted")
    }
}

pub(crate) async fn install_providers(
    pools: &ProviderPools,
    names: &[String],
) -> Vec<InstallReceipt> {
    let mut receipts = Vec::new();
    for name in names {
        let receipt = pools
            .install(installation(&provider(name), 0, b"k", http_config(name, 1)))
            .await
            .expect("provider installs");
        receipts.push(receipt);
    }
    receipts
}

/// Holds `count` grants of a blocking tenant so that everything queued
/// afterwards waits.
pub(crate) async fn block(
    pools: &ProviderPools,
    receipt: &InstallReceipt,
    count: usize,
) -> Vec<PoolReady> {
    let mut held = Vec::new();
    for i in 0..count {
        held.push(
            admitted(
                pools,
                request(pools, plan("blocker", i as u64), receipt, b"b"),
            )
            .await,
        );
    }
    held
}
