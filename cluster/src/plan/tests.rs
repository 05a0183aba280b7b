//! The leader's step against a simulation of three nodes under every
//! interleaving proptest draws: reports posted late, tables read and
//! applied late,
//! contact lost and regained, registrations expiring, nodes coming back
//! under a new incarnation, nodes leaving, requests starting and ending. After every
//! step, what the nodes can admit plus what still runs stays within the
//! pool.

use std::collections::BTreeMap;

use proptest::prelude::*;
use provider_pools_actors::TenantId;
use provider_pools_control_plane::NodeId;

use super::next_table;
use crate::share::Holding;
use crate::wire::{Report, Table};

const POOL: u32 = 10;
const CAP: u32 = 8;
const QUARANTINE: u64 = 3;
const NODES: usize = 3;

fn node(i: usize) -> NodeId {
    NodeId::new(format!("n{i}")).expect("a valid node")
}

fn tenant(i: u8) -> TenantId {
    TenantId::new(format!("t{i}")).expect("a valid tenant")
}

/// One node as the simulation sees it.
#[derive(Debug, Clone)]
struct Sim {
    registered: bool,
    contact: bool,
    incarnation: u64,
    holding: Holding,
    /// Running requests, each with the table epoch it started under.
    running: Vec<u64>,
    posted: Option<Report>,
    leaving: bool,
    /// The table as last read: applying it may come later.
    seen: Option<Table>,
    backlog: BTreeMap<TenantId, u32>,
}

impl Sim {
    fn new() -> Self {
        Self {
            registered: true,
            contact: true,
            incarnation: 1,
            holding: Holding::default(),
            running: Vec::new(),
            posted: None,
            leaving: false,
            seen: None,
            backlog: BTreeMap::new(),
        }
    }

    /// What this node can still put on the provider: its share while it
    /// admits, or only what runs once it fell back.
    fn exposure(&self) -> u32 {
        let running = self.running.len() as u32;
        if self.contact {
            self.holding.in_force.max(running)
        } else {
            running
        }
    }

    fn apply(&mut self, i: usize, table: Option<&Table>) {
        let (epoch, target) = self.holding.target(
            table,
            &node(i),
            self.incarnation,
            self.contact,
            self.leaving,
        );
        let running = self.running.len() as u32;
        let in_force = if target >= self.holding.in_force {
            target
        } else {
            target.max(running)
        };
        assert!(
            in_force <= self.holding.in_force || table.is_some_and(|t| t.epoch == epoch),
            "a raise only on a newer table"
        );
        self.holding = Holding { epoch, in_force };
    }
}

#[derive(Debug, Clone)]
enum Step {
    LeaderRead,
    LeaderWrite,
    Read(usize),
    Apply(usize),
    Post(usize, u8, u32),
    Start(usize),
    Finish(usize),
    LoseContact(usize),
    RegainContact(usize),
    Expire(usize),
    Rejoin(usize),
    Leave(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let i = 0..NODES;
    prop_oneof![
        2 => Just(Step::LeaderRead),
        2 => Just(Step::LeaderWrite),
        3 => i.clone().prop_map(Step::Read),
        3 => i.clone().prop_map(Step::Apply),
        4 => (i.clone(), 0u8..3, 0u32..12).prop_map(|(i, t, b)| Step::Post(i, t, b)),
        4 => i.clone().prop_map(Step::Start),
        3 => i.clone().prop_map(Step::Finish),
        1 => i.clone().prop_map(Step::LoseContact),
        1 => i.clone().prop_map(Step::RegainContact),
        1 => i.clone().prop_map(Step::Expire),
        1 => i.clone().prop_map(Step::Rejoin),
        1 => i.prop_map(Step::Leave),
    ]
}

struct World {
    nodes: Vec<Sim>,
    table: Option<Table>,
    read: Option<BTreeMap<NodeId, Report>>,
}

impl World {
    /// Three nodes, no table yet.
    fn new() -> Self {
        Self {
            nodes: vec![Sim::new(); NODES],
            table: None,
            read: None,
        }
    }

    /// Each node `i` backlogged with 10 for its own tenant `t<i>`, after
    /// four full rounds.
    fn converged_one_tenant_per_node() -> Self {
        let mut world = Self::new();
        for (i, n) in world.nodes.iter_mut().enumerate() {
            n.backlog.insert(tenant(i as u8), 10);
        }
        for _ in 0..4 {
            round(&mut world);
        }
        world
    }

    fn epoch(&self) -> u64 {
        self.table.as_ref().map_or(0, |t| t.epoch)
    }

    fn run(&mut self, step: &Step) {
        match *step {
            Step::LeaderRead => {
                let reports = self
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| n.registered)
                    .filter_map(|(i, n)| Some((node(i), n.posted.clone()?)))
                    .collect();
                self.read = Some(reports);
            }
            Step::LeaderWrite => {
                let Some(reports) = self.read.take() else {
                    return;
                };
                let next = next_table(POOL, QUARANTINE, self.table.as_ref(), &reports);
                // Requests last at most the quarantine (the drain time).
                for n in &mut self.nodes {
                    n.running
                        .retain(|&started| started + QUARANTINE > next.epoch);
                }
                self.table = Some(next);
            }
            Step::Read(i) => {
                self.nodes[i].seen = self.table.clone();
            }
            Step::Apply(i) => {
                let n = &mut self.nodes[i];
                let seen = n.seen.clone();
                n.apply(i, seen.as_ref());
            }
            Step::Post(i, t, backlog) => {
                let n = &mut self.nodes[i];
                if n.registered && n.contact {
                    n.backlog.insert(tenant(t), backlog);
                    n.posted = Some(Report {
                        incarnation: n.incarnation,
                        epoch: n.holding.epoch,
                        in_force: n.holding.in_force,
                        cap: CAP,
                        tenants: n.backlog.clone(),
                        weights: BTreeMap::new(),
                        leaving: n.leaving,
                    });
                }
            }
            Step::Start(i) => {
                let epoch = self.epoch();
                let n = &mut self.nodes[i];
                if n.contact && (n.running.len() as u32) < n.holding.in_force {
                    n.running.push(epoch);
                }
            }
            Step::Finish(i) => {
                self.nodes[i].running.pop();
            }
            Step::LoseContact(i) => {
                let n = &mut self.nodes[i];
                n.contact = false;
                n.apply(i, None);
            }
            Step::RegainContact(i) => {
                let n = &mut self.nodes[i];
                if n.registered {
                    n.contact = true;
                }
            }
            Step::Expire(i) => {
                // A registration lapses only after its node lost contact.
                let n = &mut self.nodes[i];
                if !n.contact {
                    n.registered = false;
                    n.posted = None;
                }
            }
            Step::Rejoin(i) => {
                let n = &mut self.nodes[i];
                if !n.registered {
                    n.registered = true;
                    n.contact = true;
                    n.leaving = false;
                    n.incarnation += 1;
                }
            }
            Step::Leave(i) => self.nodes[i].leaving = true,
        }
    }

    fn exposure(&self) -> u32 {
        self.nodes.iter().map(Sim::exposure).sum()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn the_nodes_never_hold_more_than_the_pool(steps in prop::collection::vec(step(), 1..300)) {
        let mut world = World {
            nodes: vec![Sim::new(); NODES],
            table: None,
            read: None,
        };
        for step in &steps {
            world.run(step);
            prop_assert!(
                world.exposure() <= POOL,
                "after {step:?}: exposure {} above {POOL}: {:?} {:?}",
                world.exposure(),
                world.table,
                world.nodes
            );
        }
    }
}

/// Every node posts, the leader runs a round, every node applies: once.
fn round(world: &mut World) {
    for i in 0..NODES {
        world.run(&Step::Read(i));
        world.run(&Step::Apply(i));
        let backlog: Vec<(TenantId, u32)> = world.nodes[i]
            .backlog
            .iter()
            .map(|(t, b)| (t.clone(), *b))
            .collect();
        let n = &mut world.nodes[i];
        n.posted = Some(Report {
            incarnation: n.incarnation,
            epoch: n.holding.epoch,
            in_force: n.holding.in_force,
            cap: CAP,
            tenants: backlog.into_iter().collect(),
            weights: BTreeMap::new(),
            leaving: false,
        });
    }
    world.run(&Step::LeaderRead);
    world.run(&Step::LeaderWrite);
}

#[test]
fn shares_converge_to_the_fair_division_and_move_when_demand_moves() {
    let mut world = World::new();
    // t0 backlogged on all three nodes, t1 on n2 only: 5 each globally.
    for i in 0..NODES {
        world.nodes[i].backlog.insert(tenant(0), 10);
    }
    world.nodes[2].backlog.insert(tenant(1), 10);
    for _ in 0..4 {
        round(&mut world);
    }
    let table = world.table.clone().expect("a table");
    let share = |n: usize, t: u8| table.rows[&node(n)].tenants.get(&tenant(t)).copied();
    let t0: u32 = (0..NODES).filter_map(|n| share(n, 0)).sum();
    assert_eq!((t0, share(2, 1)), (5, Some(5)), "{table:?}");
    let in_force: Vec<u32> = world.nodes.iter().map(|n| n.holding.in_force).collect();
    assert_eq!(in_force.iter().sum::<u32>(), POOL, "{in_force:?}");
    assert!(
        in_force[2] >= 6,
        "n2 holds t1's 5 and part of t0's: {in_force:?}"
    );
    // t1 leaves: n2's share falls back to its part of t0, the rest moves.
    world.nodes[2].backlog.remove(&tenant(1));
    for _ in 0..4 {
        round(&mut world);
    }
    let in_force: Vec<u32> = world.nodes.iter().map(|n| n.holding.in_force).collect();
    assert!(
        in_force.iter().all(|&f| (3..=4).contains(&f)),
        "an even split of 10 over three: {in_force:?}"
    );
}

#[test]
fn a_departed_nodes_bound_stays_reserved_for_the_quarantine_then_moves() {
    let mut world = World::converged_one_tenant_per_node();
    let before = world.table.clone().expect("a table");
    let n0_bound = before.rows[&node(0)].bound;
    assert!(n0_bound > 0, "{before:?}");
    world.run(&Step::LoseContact(0));
    world.run(&Step::Expire(0));
    round(&mut world);
    let table = world.table.clone().expect("a table");
    assert_eq!(table.departed[&node(0)].bound, n0_bound, "{table:?}");
    let others: u32 = table.rows.values().map(|r| r.bound).sum();
    assert!(others + n0_bound <= POOL);
    for _ in 0..QUARANTINE {
        round(&mut world);
    }
    let table = world.table.clone().expect("a table");
    assert!(table.departed.is_empty(), "{table:?}");
    for i in 1..NODES {
        world.run(&Step::Read(i));
        world.run(&Step::Apply(i));
    }
    let others: u32 = world.nodes[1..].iter().map(|n| n.holding.in_force).sum();
    assert_eq!(
        others, POOL,
        "the two live nodes hold the pool between them"
    );
}

#[test]
fn a_node_never_raises_on_a_table_it_reported_a_lower_share_under() {
    let mut world = World::converged_one_tenant_per_node();
    let held = world.nodes[0].holding.in_force;
    assert!(held > 0, "n0 holds a share");
    // n0 read the table, then lost contact (down to what runs: nothing),
    // came back and said so; the leader hands its share to the others.
    world.run(&Step::Read(0));
    world.run(&Step::Apply(0));
    world.run(&Step::LoseContact(0));
    world.run(&Step::RegainContact(0));
    world.nodes[0].backlog.clear();
    world.run(&Step::Post(0, 0, 0));
    for _ in 0..3 {
        for i in 1..NODES {
            world.run(&Step::Post(i, i as u8, 10));
            world.run(&Step::Read(i));
            world.run(&Step::Apply(i));
        }
        world.run(&Step::LeaderRead);
        world.run(&Step::LeaderWrite);
    }
    for i in 1..NODES {
        world.run(&Step::Read(i));
        world.run(&Step::Apply(i));
    }
    // Now n0 applies the table it read before: it must not raise.
    world.run(&Step::Apply(0));
    assert_eq!(world.nodes[0].holding.in_force, 0);
    assert!(world.exposure() <= POOL, "{:?}", world.nodes);
}

#[test]
fn a_leaving_node_is_bound_to_nothing_once_it_acknowledges_so_its_departure_reserves_nothing() {
    let mut world = World::converged_one_tenant_per_node();
    assert!(world.table.as_ref().expect("a table").rows[&node(0)].bound > 0);
    // n0 leaves: it aims at zero and says so, its backlog still listed.
    let mut leaving_rounds = 0;
    loop {
        world.nodes[0].leaving = true;
        world.run(&Step::Read(0));
        world.run(&Step::Apply(0));
        let n = &mut world.nodes[0];
        n.posted = Some(Report {
            incarnation: n.incarnation,
            epoch: n.holding.epoch,
            in_force: n.holding.in_force,
            cap: CAP,
            tenants: n.backlog.clone(),
            weights: BTreeMap::new(),
            leaving: true,
        });
        world.run(&Step::LeaderRead);
        world.run(&Step::LeaderWrite);
        leaving_rounds += 1;
        let table = world.table.as_ref().expect("a table");
        if table.rows[&node(0)].bound == 0 {
            break;
        }
        assert!(leaving_rounds < 4, "n0 still bound: {table:?}");
    }
    world.nodes[0].registered = false;
    world.nodes[0].posted = None;
    round(&mut world);
    let table = world.table.as_ref().expect("a table");
    assert!(table.departed.is_empty(), "nothing reserved: {table:?}");
}

#[test]
fn a_node_whose_reports_run_one_table_behind_still_gives_its_old_share_up() {
    let mut world = World::new();
    world.nodes[0].backlog.insert(tenant(0), 10);
    world.nodes[1].backlog.insert(tenant(1), 10);
    for _ in 0..4 {
        round(&mut world);
    }
    // n2 arrives; n1 reads each table just before the leader writes the
    // next, so its report always names the table before the last.
    world.nodes[2].backlog.insert(tenant(2), 10);
    for _ in 0..12 {
        for i in [0, 2] {
            world.run(&Step::Read(i));
            world.run(&Step::Apply(i));
            world.run(&Step::Post(i, i as u8, 10));
        }
        world.run(&Step::Read(1));
        world.run(&Step::Apply(1));
        world.run(&Step::LeaderRead);
        world.run(&Step::LeaderWrite);
        world.run(&Step::Post(1, 1, 10));
        assert!(world.exposure() <= POOL);
    }
    let in_force: Vec<u32> = world.nodes.iter().map(|n| n.holding.in_force).collect();
    assert!(
        in_force.iter().all(|&f| (3..=4).contains(&f)),
        "{in_force:?}"
    );
}

/// A rate's division: 60 requests per second for three members with a
/// floor of 5 each leaves a pool of 45; each node could hold 55 more. A
/// node reports a tenant with requests waiting at its cap (a rate's demand
/// is not a count of requests).
mod rate {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use provider_pools_actors::ProviderId;

    use super::{node, tenant};
    use crate::config::GlobalRate;
    use crate::plan::next_table;
    use crate::wire::{Report, Table};

    const CAP: u32 = 55;

    fn pool() -> u32 {
        let rate = GlobalRate {
            provider: ProviderId::new("api").expect("a valid provider"),
            requests: 60,
            period: Duration::from_secs(1),
            floor: 5,
        };
        rate.dynamic_pool(3)
    }

    /// Node `i`'s report after applying `table` (all of its grant), with
    /// requests waiting for `tenants`.
    fn report(i: usize, table: Option<&Table>, tenants: &[u8]) -> Report {
        Report {
            incarnation: 1,
            epoch: table.map_or(0, |t| t.epoch),
            in_force: table
                .and_then(|t| t.rows.get(&node(i)))
                .map_or(0, |row| row.grant),
            cap: CAP,
            tenants: tenants.iter().map(|&t| (tenant(t), CAP)).collect(),
            weights: BTreeMap::new(),
            leaving: false,
        }
    }

    fn tenant_total(table: &Table, t: u8) -> u32 {
        table
            .rows
            .values()
            .filter_map(|row| row.tenants.get(&tenant(t)))
            .sum()
    }

    #[test]
    fn a_rate_goes_to_the_waiting_tenants_equally_wherever_they_wait() {
        assert_eq!(pool(), 45);
        // x waits on n0 and n1, y on n2 only.
        let waiting: [&[u8]; 3] = [&[0], &[0], &[1]];
        let mut table: Option<Table> = None;
        for _ in 0..3 {
            let reports: BTreeMap<_, _> = (0..3)
                .map(|i| (node(i), report(i, table.as_ref(), waiting[i])))
                .collect();
            table = Some(next_table(pool(), 3, table.as_ref(), &reports));
        }
        let table = table.expect("a table");
        let (x, y) = (tenant_total(&table, 0), tenant_total(&table, 1));
        assert_eq!(x + y, 45, "{table:?}");
        assert!(x.abs_diff(y) <= 1, "x {x}, y {y}: {table:?}");
        let grants: Vec<u32> = (0..3).map(|i| table.rows[&node(i)].grant).collect();
        assert_eq!(grants.iter().sum::<u32>(), 45, "{grants:?}");
        assert_eq!(grants[2], y, "n2 carries y alone: {grants:?}");
        assert!(grants[0].abs_diff(grants[1]) <= 1, "x split: {grants:?}");
    }

    #[test]
    fn a_tenant_takes_the_highest_weight_any_live_node_reports_for_it() {
        // x waits on n0 (weight 2 there) and n1 (weight 3 there: the host
        // raised it on n1 first), y on n2: x's weight is 3, so the 45 go
        // 33.75 : 11.25, the unit left over to the larger remainder.
        let mut reports: BTreeMap<_, _> = (0..3)
            .map(|i| (node(i), report(i, None, [&[0u8][..], &[0], &[1]][i])))
            .collect();
        for (i, weight) in [(0, 2), (1, 3)] {
            if let Some(report) = reports.get_mut(&node(i)) {
                report.weights.insert(tenant(0), weight);
            }
        }
        let table = next_table(pool(), 3, None, &reports);
        assert_eq!(tenant_total(&table, 0), 34, "{table:?}");
        assert_eq!(tenant_total(&table, 1), 11, "{table:?}");
        // A leaving node's weight counts no more (nor its backlog): n0's
        // weight 2 is x's, so the 45 go 30 : 15.
        if let Some(n1) = reports.get_mut(&node(1)) {
            n1.leaving = true;
        }
        let table = next_table(pool(), 3, None, &reports);
        assert_eq!(tenant_total(&table, 0), 30, "{table:?}");
        assert_eq!(tenant_total(&table, 1), 15, "{table:?}");
    }

    #[test]
    fn a_rate_raise_waits_until_the_node_giving_it_up_acknowledges() {
        // n0 alone has requests waiting: it holds the whole pool.
        let mut table: Option<Table> = None;
        for _ in 0..2 {
            let reports: BTreeMap<_, _> = (0..3)
                .map(|i| {
                    let waiting: &[u8] = if i == 0 { &[0] } else { &[] };
                    (node(i), report(i, table.as_ref(), waiting))
                })
                .collect();
            table = Some(next_table(pool(), 3, table.as_ref(), &reports));
        }
        let converged = table.clone().expect("a table");
        assert_eq!(converged.rows[&node(0)].grant, 45, "{converged:?}");

        // y starts waiting on n1; n0 has not yet applied the lowering.
        let mut reports: BTreeMap<_, _> = (0..3)
            .map(|i| {
                let waiting: &[u8] = [&[0u8][..], &[1], &[]][i];
                (node(i), report(i, Some(&converged), waiting))
            })
            .collect();
        let lowered = next_table(pool(), 3, Some(&converged), &reports);
        let bounds: u32 = lowered.rows.values().map(|row| row.bound).sum();
        assert!(bounds <= 45, "{lowered:?}");
        assert!(lowered.rows[&node(0)].grant < 45, "{lowered:?}");
        assert_eq!(lowered.rows[&node(0)].bound, 45, "{lowered:?}");
        assert_eq!(lowered.rows[&node(1)].grant, 0, "no raise yet: {lowered:?}");

        // n0 reports the lowering in force: the raise is paid.
        reports.insert(node(0), report(0, Some(&lowered), &[0]));
        reports.insert(node(1), report(1, Some(&lowered), &[1]));
        let raised = next_table(pool(), 3, Some(&lowered), &reports);
        let bounds: u32 = raised.rows.values().map(|row| row.bound).sum();
        assert!(bounds <= 45, "{raised:?}");
        let (n0, n1) = (raised.rows[&node(0)].grant, raised.rows[&node(1)].grant);
        assert_eq!(n0 + n1, 45, "{raised:?}");
        assert!(n0.abs_diff(n1) <= 1, "n0 {n0}, n1 {n1}");
    }
}
