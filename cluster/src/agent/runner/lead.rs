//! The leader's side of a period: campaign for a provider's lease and,
//! while the guard is safe, write the provider's next table fenced by the
//! lease's token.

use std::collections::BTreeMap;

use provider_pools_control_plane::{
    ControlPlaneError, LeadershipGuard, LeaseRequest, NodeId, SkewMargin,
};
use tokio::time::Instant;

use super::Runner;
use crate::error::ClusterError;
use crate::plan::next_table;
use crate::wire::{Report, Table};

impl Runner {
    /// Campaigns for provider `at`'s lease and, while leading safely,
    /// writes its next table.
    pub(super) async fn lead(&mut self, at: usize) {
        let node = self.config.node.clone();
        let ttl = self.config.lease_ttl;
        let margin = SkewMargin(self.config.skew_margin);
        let tracked = &mut self.providers[at];
        let sent = Instant::now();
        let mut failure = None;
        match tracked.guard.as_mut() {
            Some(guard) if guard.check_at(sent).is_ok() => {
                match self.board.renew(guard.grant().clone()).await {
                    Ok(_) => guard.renewed(sent),
                    Err(ControlPlaneError::LeaseLost) => tracked.guard = None,
                    Err(error) => failure = Some(error),
                }
            }
            _ => {
                tracked.guard = None;
                let request = LeaseRequest::new(tracked.lease.clone(), node, ttl);
                match request {
                    Ok(request) => match self.board.acquire(request).await {
                        Ok(grant) => tracked.guard = LeadershipGuard::new(grant, sent, margin).ok(),
                        Err(ControlPlaneError::LeaseHeld { .. }) => {}
                        Err(error) => failure = Some(error),
                    },
                    Err(error) => failure = Some(error),
                }
            }
        }
        if let Some(error) = failure {
            return self.note("leadership", &error);
        }
        if let Err(error) = self.allocate(at).await {
            self.last_error = Some(format!("allocation: {error}"));
        }
    }

    /// The leader's step for provider `at`.
    async fn allocate(&mut self, at: usize) -> Result<(), ClusterError> {
        let tracked = &self.providers[at];
        let Some(guard) = tracked.guard.as_ref().filter(|g| g.check().is_ok()) else {
            return Ok(());
        };
        let grant = guard.grant().clone();
        let posts = self
            .board
            .read_posts(self.config.service.clone(), tracked.topic.clone())
            .await?;
        let previous = match self.board.read_fenced(tracked.lease.clone()).await? {
            Some(record) => Some(Table::decode(&record.value)?),
            None => None,
        };
        let mut reports = BTreeMap::new();
        let mut unreadable = None;
        for post in posts {
            if !self.config.members.contains(&post.node) {
                continue;
            }
            match Report::decode(&post.value) {
                Ok(report) => {
                    reports.insert(post.node, report);
                }
                Err(error) => {
                    // A report that does not decode is one node's problem:
                    // that node keeps what it may hold and gets nothing
                    // new; the others' shares still move.
                    if let Some(held) = previous.as_ref().and_then(|t| standing(t, &post.node)) {
                        reports.insert(post.node.clone(), held);
                    }
                    unreadable = Some(format!("{}'s report: {error}", post.node));
                }
            }
        }
        let pool = tracked.pool;
        let table = next_table(pool, self.quarantine, previous.as_ref(), &reports);
        let bytes = table.encode()?;
        if tracked.guard.as_ref().is_none_or(|g| g.check().is_err()) {
            return Ok(());
        }
        match self.board.write_fenced(grant, bytes).await {
            Ok(()) => match unreadable {
                Some(reason) => Err(ClusterError::decode("report", reason)),
                None => Ok(()),
            },
            Err(ControlPlaneError::LeaseLost) => {
                self.providers[at].guard = None;
                Ok(())
            }
            Err(error) => Err(error.into()),
        }
    }
}

/// What an unreadable node stands at: its row of the last table, as a
/// report that acknowledges no table (so it is counted at its bound and
/// recent grants), wants nothing and can take nothing more.
fn standing(table: &Table, node: &NodeId) -> Option<Report> {
    let row = table.rows.get(node)?;
    Some(Report {
        incarnation: row.incarnation,
        epoch: 0,
        in_force: row.bound,
        cap: 0,
        tenants: BTreeMap::new(),
        weights: BTreeMap::new(),
        leaving: false,
    })
}
